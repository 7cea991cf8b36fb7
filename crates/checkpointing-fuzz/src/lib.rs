//! Fuzz targets for every parser of untrusted bytes in `checkpointing`.
//!
//! Each target takes arbitrary bytes and feeds them to one parser as a user's
//! input or a damaged file would. A target passes when the parser returns a
//! value or a typed error; it fails by panicking (a panic, an overflow in a
//! debug build, an abort on an allocation). Where a parser accepts its
//! input, the target also checks a property of the result (a round trip).
//!
//! The targets run two ways:
//! - on stable Rust, over the committed corpus (`corpus/<target>/`) and
//!   seeded mutations of it, for a bounded time ([`run_for`]; the test
//!   `tests/corpus.rs` runs every target briefly in CI, the binary
//!   `fuzz-run` for as long as asked);
//! - under libFuzzer with coverage guidance (`fuzz/`, `cargo +nightly fuzz
//!   run <target>`), whose corpus is minimised into `corpus/`.
//!
//! ```
//! for target in checkpointing_fuzz::TARGETS {
//!     (target.run)(b"Forward(0, 1, True, False, StorageType.RAM)");
//! }
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use checkpointing::{fuzzing, Action, ActionRecord, Checkpoint, Replay, ScheduleSpec};

mod mutate;

pub use mutate::Mutator;

/// A fuzz target: a name (its corpus directory) and the function.
#[derive(Clone, Copy)]
pub struct Target {
    /// The name, as `cargo fuzz run` and `fuzz-run` take it.
    pub name: &'static str,
    /// Feeds the bytes to the parser; panics on a defect.
    pub run: fn(&[u8]),
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "action_text",
        run: action_text,
    },
    Target {
        name: "action_json",
        run: action_json,
    },
    Target {
        name: "schedule_spec",
        run: schedule_spec,
    },
    Target {
        name: "record",
        run: record,
    },
    Target {
        name: "disk_snapshot",
        run: disk_snapshot,
    },
    Target {
        name: "compressed_blob",
        run: compressed_blob,
    },
    Target {
        name: "lossy_blob",
        run: lossy_blob,
    },
    Target {
        name: "journal",
        run: journal,
    },
    Target {
        name: "cli_args",
        run: cli_args,
    },
    #[cfg(feature = "hdf5")]
    Target {
        name: "hdf5_snapshot",
        run: hdf5_snapshot,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().copied().find(|t| t.name == name)
}

/// Largest number of steps a target drives a schedule or a command for, so
/// that one input runs in milliseconds.
const MAX_STEPS: u64 = 300;

/// Lines of text, as the action parsers see them.
fn lines(data: &[u8]) -> impl Iterator<Item = &str> {
    std::str::from_utf8(data).unwrap_or("").lines()
}

/// The action text form (`Forward(0, 2, True, False, StorageType.RAM)`):
/// what parses prints back to itself.
pub fn action_text(data: &[u8]) {
    for line in lines(data) {
        if let Ok(action) = line.parse::<Action>() {
            let again: Action = action.to_string().parse().expect("printed actions parse");
            assert_eq!(again, action, "{line:?}");
        }
    }
}

/// The JSON-lines form: what parses prints back to itself.
pub fn action_json(data: &[u8]) {
    for line in lines(data) {
        if let Ok(action) = Action::from_json(line) {
            let again = Action::from_json(&action.to_json()).expect("printed actions parse");
            assert_eq!(again, action, "{line:?}");
        }
    }
}

/// A `ScheduleSpec` in JSON: what parses serializes back to itself, and a
/// small one builds, drives and replays with typed errors only.
pub fn schedule_spec(data: &[u8]) {
    let Ok(spec) = serde_json::from_slice::<ScheduleSpec>(data) else {
        return;
    };
    let json = serde_json::to_string(&spec).expect("specs serialize");
    let again: ScheduleSpec = serde_json::from_str(&json).expect("serialized specs parse");
    assert_eq!(again, spec, "{json}");
    exercise(&spec);
}

/// Builds, drives, replays and costs `spec` when it is small.
fn exercise(spec: &ScheduleSpec) {
    if spec.steps() > MAX_STEPS || spec_snapshots(spec) > MAX_STEPS {
        return;
    }
    let _ = spec.cost();
    if let Ok(actions) = spec.drive() {
        let actions = actions.map_while(Result::ok);
        let _ = Replay::new(spec.steps().max(1)).run(actions);
    }
}

/// The largest snapshot or period parameter of `spec` (bounds the work of
/// building it).
fn spec_snapshots(spec: &ScheduleSpec) -> u64 {
    let Ok(serde_json::Value::Object(map)) = serde_json::to_value(spec) else {
        return 0;
    };
    map.values()
        .filter_map(serde_json::Value::as_u64)
        .max()
        .unwrap_or(0)
}

/// Fixed-layout action records (24 bytes each): what decodes encodes back
/// to the same action.
pub fn record(data: &[u8]) {
    for chunk in data.chunks_exact(std::mem::size_of::<ActionRecord>()) {
        let record: ActionRecord = bytemuck::pod_read_unaligned(chunk);
        if let Ok(action) = Action::try_from(record) {
            assert_eq!(Action::try_from(ActionRecord::from(action)), Ok(action));
        }
    }
}

/// The first byte chooses how the rest reaches a decoder: `0` as the whole
/// file (header and checksum checks), otherwise sealed with a valid header
/// and checksum (the decoder behind them).
fn sealed(data: &[u8]) -> Option<(bool, &[u8])> {
    let (&mode, rest) = data.split_first()?;
    Some((mode & 1 == 1, rest))
}

/// Bytes that bincode writes as they are (a tuple has no length prefix).
pub struct Raw<'a>(pub &'a [u8]);

impl serde::Serialize for Raw<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut tuple = serializer.serialize_tuple(self.0.len())?;
        for byte in self.0 {
            tuple.serialize_element(byte)?;
        }
        tuple.end()
    }
}

/// A `DiskStore` snapshot file of step 7, decoded as the executor's
/// checkpoint of `Vec<f64>` states and as a plain `Vec<f64>`.
pub fn disk_snapshot(data: &[u8]) {
    let Some((seal, rest)) = sealed(data) else {
        return;
    };
    let file = if seal {
        fuzzing::encode_snapshot_file(7, &Raw(rest)).expect("bytes encode")
    } else {
        rest.to_vec()
    };
    let _ = fuzzing::decode_snapshot_file::<Checkpoint<Vec<f64>>>(7, &file);
    let _ = fuzzing::decode_snapshot_file::<Vec<f64>>(7, &file);
    let _ = fuzzing::decode_snapshot_file::<Vec<f64>>(8, &file);
}

/// A `CompressedStore` payload: a serialized `Blob` (codec, shuffle, raw
/// length, bytes), decompressed and decoded as a checkpoint.
pub fn compressed_blob(data: &[u8]) {
    let Ok(blob) = checkpointing::storage::decode_bounded::<checkpointing_store::Blob>(data) else {
        return;
    };
    if let Ok(raw) = blob.decompress() {
        assert_eq!(raw.len() as u64, blob.raw_len());
        let _ = checkpointing::storage::decode_bounded::<Checkpoint<Vec<f64>>>(&raw);
    }
}

/// A `LossyStore` payload: a serialized `LossyBlob` (counts, then arrays
/// with their headers and zfp, SZ3 or lossless bytes), decompressed as a
/// checkpoint; where an array decodes, it has the shape its header
/// declares. (With the `lossy` feature the zfp and SZ3 decoders run;
/// without it those arrays are refused as not in the build.)
pub fn lossy_blob(data: &[u8]) {
    let Ok(blob) = checkpointing::storage::decode_bounded::<checkpointing_store::LossyBlob>(data)
    else {
        return;
    };
    for array in blob.arrays() {
        if let Ok(decoded) = array.decompress() {
            assert_eq!(decoded.shape(), &array.shape()[..]);
            assert_eq!(
                (decoded.len() * array.element().width()) as u64,
                array.raw_len()
            );
        }
    }
    let _ = blob.decompress_value::<Checkpoint<Vec<f64>>>();
}

/// A journal file, decoded as a resumed run of `Vec<f64>` states with a
/// `Vec<f64>` adjoint and `(f64, Vec<f64>)` accumulators would.
pub fn journal(data: &[u8]) {
    let Some((seal, rest)) = sealed(data) else {
        return;
    };
    let file = if seal {
        fuzzing::seal_journal(rest)
    } else {
        rest.to_vec()
    };
    let _ = fuzzing::decode_journal_file::<Vec<f64>, Vec<f64>, (f64, Vec<f64>)>(&file);
}

/// A command line of the `checkpointing` command (arguments separated by
/// NUL or newline bytes): parsed and checked as the command does; a small
/// schedule it names is driven and costed.
pub fn cli_args(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let args = std::iter::once("checkpointing").chain(text.split(['\0', '\n']));
    let Ok(cli) = checkpointing_cli::parse(args) else {
        return;
    };
    if let Some(spec) = cli.spec() {
        exercise(spec);
    }
}

#[cfg(feature = "hdf5")]
mod hdf5_target;
#[cfg(feature = "hdf5")]
pub use hdf5_target::hdf5_snapshot;

/// Where the committed corpus of `target` lives.
pub fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target)
}

/// The committed corpus of `target`: every file of its directory.
pub fn corpus(target: &str) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir(target))
        .map(|dir| dir.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .filter_map(|path| std::fs::read(path).ok())
        .collect()
}

/// What a bounded run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunStats {
    /// Inputs run (the corpus, then mutations).
    pub executions: u64,
    /// Corpus files.
    pub corpus: usize,
}

/// The input running and since when, for the watchdog.
type Running = (Instant, Vec<u8>);

/// Longest one input may run before it counts as a hang.
pub const INPUT_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs `target` over its whole corpus, then over mutations of it (seeded
/// by `seed`) for `budget`: the mutations get the budget however long the
/// corpus took, so a slow corpus on a loaded machine still gets mutated. A defect panics, with the input
/// written to `failures/<target>-<hash>` under this crate first; an input
/// that runs longer than [`INPUT_TIMEOUT`] is written there too and ends
/// the process (a parser that hangs is a defect as well).
pub fn run_for(target: Target, budget: Duration, seed: u64) -> RunStats {
    let corpus = corpus(target.name);
    let current: Arc<Mutex<Option<Running>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (current, done) = (current.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let guard = current.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((since, input)) = guard.as_ref() {
                    if since.elapsed() > INPUT_TIMEOUT {
                        let path = save_failure(&format!("{}-timeout", target.name), input);
                        eprintln!(
                            "{}: an input ran over {INPUT_TIMEOUT:?}; saved to {}",
                            target.name,
                            path.display()
                        );
                        std::process::abort();
                    }
                }
            }
        })
    };
    let mut executions = 0;
    let mut check = |input: &[u8]| {
        *current.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), input.to_vec()));
        let outcome = std::panic::catch_unwind(|| (target.run)(input));
        if let Err(panic) = outcome {
            let path = save_failure(target.name, input);
            eprintln!(
                "{}: input that fails saved to {}",
                target.name,
                path.display()
            );
            std::panic::resume_unwind(panic);
        }
        executions += 1;
    };
    for input in &corpus {
        check(input);
    }
    let mut mutator = Mutator::new(seed, corpus.clone());
    let mutating = Instant::now();
    while mutating.elapsed() < budget {
        let input = mutator.next_input();
        check(&input);
    }
    done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    RunStats {
        executions,
        corpus: corpus.len(),
    }
}

fn save_failure(target: &str, input: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("failures");
    let _ = std::fs::create_dir_all(&dir);
    let hash = input.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let path = dir.join(format!("{target}-{hash:016x}"));
    let _ = std::fs::write(&path, input);
    path
}
