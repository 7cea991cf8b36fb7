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
