//! A schedule written outside the crate, with only the public API: the
//! `Schedule` trait is implementable by users. The replay checker accepts
//! it and the executor's gradient through it equals store-all's.

use checkpointing::{
    Action, Cursor, Executor, FnProblem, Replay, Schedule, SingleMemory, Step, StorageLevel,
};

/// Stores the state every `stride` steps in RAM, then reverses each stride
/// from its snapshot, recomputing it with its adjoint dependencies in WORK:
/// a periodic schedule written by a user.
struct Strided {
    cursor: Cursor,
    stride: Step,
    queue: std::collections::VecDeque<Action>,
}

impl Strided {
    fn new(max_n: Step, stride: Step) -> Self {
        let starts: Vec<Step> = (0..max_n).step_by(stride as usize).collect();
        let mut queue = std::collections::VecDeque::new();
        for &n0 in &starts {
            let n1 = (n0 + stride).min(max_n);
            queue.push_back(Action::Forward {
                n0,
                n1,
                write_ics: true,
                write_adj_deps: false,
                storage: StorageLevel::Ram,
            });
        }
        queue.push_back(Action::EndForward);
        for &n0 in starts.iter().rev() {
            let n1 = (n0 + stride).min(max_n);
            queue.push_back(Action::Move {
                n: n0,
                from: StorageLevel::Ram,
                to: StorageLevel::Work,
            });
            queue.push_back(Action::Forward {
                n0,
                n1,
                write_ics: false,
                write_adj_deps: true,
                storage: StorageLevel::Work,
            });
            queue.push_back(Action::Reverse {
                n1,
                n0,
                clear_adj_deps: true,
            });
        }
        queue.push_back(Action::EndReverse);
        Self {
            cursor: Cursor::offline(max_n).unwrap(),
            stride,
            queue,
        }
    }
}

impl Iterator for Strided {
    type Item = Action;
    fn next(&mut self) -> Option<Action> {
        let action = self.queue.pop_front()?;
        let (n, r) = (self.cursor.n(), self.cursor.r());
        match action {
            Action::Forward { n1, .. } => self.cursor.set(n1, r),
            Action::Reverse { n1, n0, .. } => self.cursor.set(n, r + (n1 - n0)),
            Action::Move { n: at, .. } => self.cursor.set(at, r),
            _ => self.cursor.set(n, r),
        }
        Some(action)
    }
}

impl Schedule for Strided {
    fn cursor(&self) -> &Cursor {
        &self.cursor
    }
    fn cursor_mut(&mut self) -> &mut Cursor {
        &mut self.cursor
    }
    fn is_exhausted(&self) -> bool {
        self.queue.is_empty()
    }
    fn uses_storage(&self, level: StorageLevel) -> bool {
        level == StorageLevel::Ram && self.stride > 0
    }
}

#[test]
fn a_user_schedule_replays_and_gives_the_store_all_gradient() {
    for (max_n, stride) in [(1, 1), (10, 3), (50, 7), (64, 8)] {
        let cost = Replay::new(max_n)
            .require_freed(true)
            .run(Strided::new(max_n, stride))
            .unwrap();
        assert_eq!(cost.adjoint_steps, max_n);
        assert_eq!(cost.forward_steps, 2 * max_n);

        let mut problem = FnProblem::new(
            |i, x: &mut Vec<f64>| x[0] = x[0] * (1.0 + 1e-3 * i as f64) + x[1].sin(),
            |i, x: &Vec<f64>, l: &mut Vec<f64>| {
                l[1] += l[0] * x[1].cos();
                l[0] *= 1.0 + 1e-3 * i as f64;
            },
        );
        let terminal = |_: &Vec<f64>| Ok(vec![1.0, 0.0]);
        let mut strided = Executor::in_memory();
        let ours = strided
            .run(
                &mut problem,
                Strided::new(max_n, stride),
                vec![0.5, 0.25],
                terminal,
            )
            .unwrap();
        let all = Executor::in_memory()
            .run_online(
                &mut problem,
                SingleMemory::new(),
                vec![0.5, 0.25],
                |n, _| n == max_n,
                terminal,
            )
            .unwrap();
        assert_eq!(ours.adjoint, all.adjoint, "max_n {max_n}, stride {stride}");
        assert_eq!(
            strided.store(StorageLevel::Ram).map(|ram| ram.len()),
            Some(0)
        );
        assert_eq!(Strided::new(max_n, stride).max_n(), Some(max_n));
    }
}
