//! Unit tests of the two-level schedule.

use super::*;

/// Replaying a full period's kept actions gives the actions computed
/// step by step, over two adjoints, by action and by record.
#[test]
fn replayed_periods_equal_computed_ones() {
    for period in 1..12 {
        for snapshots in 0..4 {
            for trajectory in [Trajectory::Maximum, Trajectory::Revolve] {
                for steps in [1, period, period + 1, 3 * period, 5 * period + 2] {
                    let make = || {
                        let mut s = TwoLevel::new(period, snapshots, StorageLevel::Ram, trajectory)
                            .unwrap();
                        while s.cursor.n() < steps {
                            s.next();
                        }
                        s.finalize(steps).unwrap();
                        s
                    };
                    let kept = make();
                    let mut computed = make();
                    computed.full_period = PeriodActions::TooMany;
                    let take = |s: TwoLevel| {
                        let mut s = s;
                        (0..20 * steps + 10)
                            .map(|_| (s.next(), s.cursor.n(), s.cursor.r()))
                            .collect::<Vec<_>>()
                    };
                    let mut batched = make();
                    let expected = take(computed);
                    assert_eq!(take(kept), expected, "{period} {snapshots} {steps}");
                    // The same actions in records, batch by batch (a
                    // batch ends early at each EndReverse).
                    let mut records = Vec::new();
                    let mut batch = [ActionRecord::default(); 5];
                    while records.len() < expected.len() {
                        let room = (expected.len() - records.len()).min(batch.len());
                        let got = batched.next_records(&mut batch[..room]);
                        assert!(got > 0);
                        records.extend_from_slice(&batch[..got]);
                        let position = expected[records.len() - 1];
                        assert_eq!(
                            (batched.cursor.n(), batched.cursor.r()),
                            (position.1, position.2)
                        );
                    }
                    for (record, (action, _, _)) in records.iter().zip(&expected) {
                        assert_eq!(Action::try_from(*record).ok(), *action);
                    }
                }
            }
        }
    }
}
