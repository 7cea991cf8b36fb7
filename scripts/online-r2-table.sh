#!/usr/bin/env bash
# Prints the table of the guide's schedule reference (docs/src/reference.md):
# forward steps of OnlineR2 (online, n unknown in advance) against offline
# Revolve for the same n and snapshots, replayed by the `checkpointing`
# command's cost model.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --release -p checkpointing-cli
bin=target/release/checkpointing
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
echo "| s | optimal up to n = | n | Revolve(n, s) | OnlineR2(s) | extra | extra % | OnlineR2 RAM writes |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for s in 2 5 10 20 50; do
  range=$(( (s + 1) * (s + 2) / 2 - 1 ))
  for n in 5 20 65 231 1326 5000; do
    offline=$($bin cost revolve --max-n "$n" --snapshots-in-ram "$s" | field 'd["forward_steps"]')
    read -r online writes < <($bin cost online-r2 --steps "$n" --snapshots "$s" | field 'd["forward_steps"], d["ram"]["writes"]')
    mark=""; [ "$n" -gt "$range" ] && mark=" (beyond)"
    pct=$(python3 -c "print(f'{100 * ($online - $offline) / $offline:.2f}')")
    echo "| $s | $range | $n$mark | $offline | $online | $((online - offline)) | $pct | $writes |"
  done
done
