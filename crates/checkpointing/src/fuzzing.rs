//! Entry points for the fuzz targets of `checkpointing-fuzz`: the decoders
//! of bytes read back from files, called on bytes directly, and the
//! encoders that let a fuzzer reach a decoder behind its checksum. Behind
//! the `fuzzing` feature; not a stable API.
//!
//! ```
//! use checkpointing::fuzzing;
//! let file = fuzzing::encode_snapshot_file(3, &vec![1.0_f64]).unwrap();
//! assert_eq!(fuzzing::decode_snapshot_file::<Vec<f64>>(3, &file).unwrap(), [1.0]);
//! assert!(fuzzing::decode_snapshot_file::<Vec<f64>>(4, &file).is_err());
//! assert!(fuzzing::decode_journal_file::<f64, f64, ()>(&fuzzing::seal_journal(b"x")).is_err());
//! ```

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::action::Step;
use crate::executor::JournalError;
use crate::storage::StorageError;

/// The bytes of a [`DiskStore`](crate::DiskStore) file holding `value` for
/// `step`.
pub fn encode_snapshot_file<T: Serialize>(step: Step, value: &T) -> Result<Vec<u8>, StorageError> {
    crate::storage::encode_snapshot_file(step, value)
}

/// What [`DiskStore`](crate::DiskStore)'s `load(step)` makes of a file's
/// `bytes`.
pub fn decode_snapshot_file<T: DeserializeOwned>(
    step: Step,
    bytes: &[u8],
) -> Result<T, StorageError> {
    crate::storage::decode_snapshot_file(step, Path::new("<fuzz input>"), bytes)
}

/// What a resumed run makes of a journal file's `bytes`, for states `S`,
/// adjoint `A` and accumulators `G`.
pub fn decode_journal_file<S, A, G>(bytes: &[u8]) -> Result<(), JournalError>
where
    S: DeserializeOwned,
    A: DeserializeOwned,
    G: DeserializeOwned,
{
    crate::executor::decode_journal_file::<S, A, G>(bytes)
}

/// A journal file's bytes around `payload` (header and checksum).
pub fn seal_journal(payload: &[u8]) -> Vec<u8> {
    crate::executor::seal_journal(payload)
}
