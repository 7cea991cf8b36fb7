//! Seeded byte mutations of a corpus, for fuzzing on stable Rust without
//! coverage guidance: bit flips, byte and integer substitutions with
//! boundary values, insertions, deletions, duplications of a span, and
//! splices of two corpus entries.

/// Boundary values written over an input's bytes.
const INTERESTING: &[u64] = &[
    0,
    1,
    2,
    7,
    0x7f,
    0x80,
    0xff,
    0x100,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0xffff_ffff,
    0x1_0000_0000,
    1 << 40,
    1 << 60,
    i64::MAX as u64,
    u64::MAX - 1,
    u64::MAX,
];

/// Makes inputs from a corpus by random mutations (xorshift64*, seeded, so
/// a run can be repeated).
///
/// ```
/// let mut m = checkpointing_fuzz::Mutator::new(1, vec![b"Forward".to_vec()]);
/// let a = m.next_input();
/// let mut again = checkpointing_fuzz::Mutator::new(1, vec![b"Forward".to_vec()]);
/// assert_eq!(again.next_input(), a);
/// ```
#[derive(Debug, Clone)]
pub struct Mutator {
    state: u64,
    corpus: Vec<Vec<u8>>,
}

impl Mutator {
    /// A mutator over `corpus` (an empty corpus starts from empty inputs).
    pub fn new(seed: u64, corpus: Vec<Vec<u8>>) -> Self {
        Self {
            state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
            corpus,
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    fn pick(&mut self) -> Vec<u8> {
        if self.corpus.is_empty() {
            Vec::new()
        } else {
            let i = self.below(self.corpus.len());
            self.corpus[i].clone()
        }
    }

    /// The next input: a corpus entry with one to eight mutations.
    pub fn next_input(&mut self) -> Vec<u8> {
        let mut input = self.pick();
        let rounds = 1 + self.below(8);
        for _ in 0..rounds {
            self.mutate(&mut input);
        }
        input
    }

    fn mutate(&mut self, input: &mut Vec<u8>) {
        let len = input.len();
        match self.below(8) {
            0 if len > 0 => {
                let i = self.below(len);
                input[i] ^= 1 << self.below(8);
            }
            1 if len > 0 => {
                let i = self.below(len);
                input[i] = self.next_u64() as u8;
            }
            2 => {
                let value = INTERESTING[self.below(INTERESTING.len())];
                let width = [1, 2, 4, 8][self.below(4)];
                let at = self.below(len + 1);
                let bytes = &value.to_le_bytes()[..width];
                let end = (at + width).min(len);
                input.splice(at..end, bytes.iter().copied());
            }
            3 => {
                let at = self.below(len + 1);
                let count = 1 + self.below(16);
                let byte = self.next_u64() as u8;
                input.splice(at..at, std::iter::repeat_n(byte, count));
            }
            4 if len > 0 => {
                let at = self.below(len);
                let end = (at + 1 + self.below(16)).min(len);
                input.drain(at..end);
            }
            5 if len > 0 => {
                let at = self.below(len);
                let end = (at + 1 + self.below(32)).min(len);
                let span = input[at..end].to_vec();
                let to = self.below(len + 1);
                input.splice(to..to, span);
            }
            6 => {
                let other = self.pick();
                let cut = self.below(len + 1);
                let from = self.below(other.len() + 1);
                input.truncate(cut);
                input.extend_from_slice(&other[from..]);
            }
            _ => {
                // A decimal number, for text formats.
                let value = INTERESTING[self.below(INTERESTING.len())];
                let at = self.below(len + 1);
                input.splice(at..at, value.to_string().into_bytes());
            }
        }
    }
}
