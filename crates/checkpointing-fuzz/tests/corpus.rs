//! Every fuzz target over its committed corpus and seeded mutations of it,
//! briefly (`CHECKPOINTING_FUZZ_SECONDS`, default 2 s per target): a parser
//! that panics, overflows or aborts on one of those inputs fails here.

use std::time::Duration;

#[test]
fn every_target_survives_its_corpus_and_mutations() {
    let seconds: f64 = std::env::var("CHECKPOINTING_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    for target in checkpointing_fuzz::TARGETS {
        let stats = checkpointing_fuzz::run_for(*target, Duration::from_secs_f64(seconds), 7);
        assert!(stats.corpus > 0, "{} has no committed corpus", target.name);
        assert!(stats.executions > stats.corpus as u64, "{}", target.name);
        eprintln!("{}: {} executions", target.name, stats.executions);
    }
}

/// The journal seeds are in the current layout: a fuzzer starting from them
/// reaches past the header into the entry's fields, rather than stopping at
/// the first decode error.
#[test]
fn the_journal_seeds_decode() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/journal");
    let file = std::fs::read(dir.join("seed-file")).unwrap();
    // The first byte picks the mode (0: the file as is).
    checkpointing::fuzzing::decode_journal_file::<Vec<f64>, Vec<f64>, (f64, Vec<f64>)>(&file[1..])
        .expect("seed-file is a valid journal");
    let payload = std::fs::read(dir.join("seed-payload")).unwrap();
    let sealed = checkpointing::fuzzing::seal_journal(&payload[1..]);
    checkpointing::fuzzing::decode_journal_file::<Vec<f64>, Vec<f64>, (f64, Vec<f64>)>(&sealed)
        .expect("seed-payload sealed is a valid journal");
}
