//! Writes the seed inputs of every target into `corpus/<target>/seed-*`
//! (run once; libFuzzer's runs grow the corpus from them):
//! `cargo run -p checkpointing-fuzz --features hdf5,lossy --example make_seeds`.

use checkpointing::{
    fuzzing, Action, ActionRecord, Checkpoint, ExecutionStats, PerLevel, Revolve, Schedule,
    ScheduleSpec, StorageLevel,
};
use checkpointing_fuzz::corpus_dir;
use checkpointing_store::{Codec, Compressor, ErrorBound, LossyCodec, LossyCompressor};

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = corpus_dir(target);
    std::fs::create_dir_all(&dir).expect("corpus directory");
    std::fs::write(dir.join(format!("seed-{name}")), bytes).expect("seed written");
}

fn with_mode(mode: u8, bytes: &[u8]) -> Vec<u8> {
    std::iter::once(mode).chain(bytes.iter().copied()).collect()
}

fn main() {
    let actions: Vec<Action> = Revolve::new(6, 2).expect("valid").collect();
    let text: String = actions.iter().map(|a| format!("{a}\n")).collect();
    write("action_text", "revolve", text.as_bytes());
    let json: String = actions
        .iter()
        .map(|a| format!("{}\n", a.to_json()))
        .collect();
    write("action_json", "revolve", json.as_bytes());
    let mut schedule = Revolve::new(10, 3).expect("valid");
    let mut records = vec![ActionRecord::default(); 64];
    let filled = schedule.next_records(&mut records);
    write(
        "record",
        "revolve",
        bytemuck::cast_slice(&records[..filled]),
    );

    // One seed per registered schedule: a new schedule gets its seed here.
    for spec in ScheduleSpec::examples() {
        let json = serde_json::to_string(&spec).expect("specs serialize");
        write("schedule_spec", spec.name(), json.as_bytes());
    }

    let checkpoint = Checkpoint {
        ics: Some(vec![1.0, 2.0]),
        deps: vec![vec![3.0, 4.0]],
    };
    let file = fuzzing::encode_snapshot_file(7, &checkpoint).expect("encodes");
    write("disk_snapshot", "file", &with_mode(0, &file));
    let payload = bincode::serialize(&checkpoint).expect("encodes");
    write("disk_snapshot", "payload", &with_mode(1, &payload));

    for (name, codec) in [
        ("identity", Codec::Identity),
        ("lz4", Codec::Lz4),
        ("zstd", Codec::Zstd { level: 1 }),
    ] {
        let blob = Compressor::new(codec).compress(&payload);
        write(
            "compressed_blob",
            name,
            &bincode::serialize(&blob).expect("encodes"),
        );
    }

    // Lossy snapshots: one per codec and kind of payload (zfp and SZ3
    // streams, the lossless path of a non-finite array).
    let smooth: Vec<f64> = (0..256).map(|i| (f64::from(i) * 0.05).sin()).collect();
    let mut with_nan = smooth.clone();
    with_nan[3] = f64::NAN;
    let lossy = Checkpoint {
        ics: Some(smooth),
        deps: vec![with_nan],
    };
    for codec in [LossyCodec::Zfp, LossyCodec::Sz3] {
        if let Ok(compressor) = LossyCompressor::new(codec, ErrorBound::Absolute(1e-6)) {
            let blob = compressor.compress_value(&lossy).expect("compresses");
            write(
                "lossy_blob",
                &codec.to_string(),
                &bincode::serialize(&blob).expect("encodes"),
            );
        }
    }

    // A journal entry, field for field (bincode writes a struct as a tuple,
    // the per-level records as a map from level name to an enum).
    #[derive(serde::Serialize)]
    enum LevelRecord {
        NoStore,
        Snapshots(Vec<(u64, Checkpoint<Vec<f64>>)>),
        Manifest(Vec<(u64, String)>),
    }
    let mut checkpoints = Some(vec![(0u64, checkpoint)]);
    let levels = PerLevel::from_fn(|level| match level {
        StorageLevel::Ram => LevelRecord::Snapshots(checkpoints.take().unwrap_or_default()),
        StorageLevel::Disk => LevelRecord::Manifest(vec![(1u64, "snapshot-1".to_string())]),
        _ => LevelRecord::NoStore,
    });
    let entry = (
        r#"{"schedule":"revolve","max_n":4,"snapshots_in_ram":2}"#.to_string(),
        "heat".to_string(),
        7u32,
        3u64,
        Some((2u64, vec![1.0_f64])),
        vec![(2u64, vec![1.0_f64])],
        Some(vec![0.5_f64]),
        ExecutionStats::default(),
        (0.25_f64, vec![0.0_f64]),
        levels,
    );
    let payload = bincode::serialize(&entry).expect("encodes");
    write("journal", "payload", &with_mode(1, &payload));
    write(
        "journal",
        "file",
        &with_mode(0, &fuzzing::seal_journal(&payload)),
    );

    let commands = [
        "schedule\0revolve\0--max-n\x004\0--snapshots-in-ram\x002",
        "cost\0multistage\0--max-n\x00100\0--snapshots-in-ram\x003\0--snapshots-on-disk\x005",
        "cost\0two-level\0--steps\x0020\0--period\x005\0--binomial-snapshots\x002",
        "schedule\0single-disk\0--steps\x005\0--move-data\0--format\0jsonl",
        "compare\0--max-n\x001000\0--snapshots\x0010",
        "cost\0hrevolve\0--max-n\x0020\0--snapshots-in-ram\x002\0--snapshots-on-disk\x003\0--wd\x005",
    ];
    for (k, command) in commands.iter().enumerate() {
        write("cli_args", &k.to_string(), command.as_bytes());
    }

    // Shape (element, rows, cols), then (kind, value) for step, crc32, ics,
    // then the data.
    let mut hdf5 = vec![0u8, 2, 3];
    for (kind, value) in [(1u8, 0u64), (2, 0), (3, 1)] {
        hdf5.push(kind);
        hdf5.extend_from_slice(&value.to_le_bytes());
    }
    hdf5.extend((0..6).flat_map(|k| (k as f64).to_le_bytes()));
    write("hdf5_snapshot", "valid", &hdf5);
}
