//! The journal file: its format (a sealed header around one bincode
//! entry) and the entry's fields.

use std::fs;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::super::ExecutionStats;
use super::JournalError;
use crate::action::Step;
use crate::storage::{decode_bounded, Checkpoint};
use crate::PerLevel;

/// The journal's file name inside its directory.
pub(super) const FILE: &str = "checkpointing-journal";
/// File header: magic, payload length, CRC-32 of the payload. Version 3
/// counts the skipped forward steps in the stats; version 2 keeps one
/// record per stored level (version 1 had RAM and DISK fields).
const MAGIC: &[u8; 8] = b"CKPTJRN3";
/// The magic of every earlier version, and what tells that version apart.
const OLDER: [(&[u8; 8], &str); 2] = [
    (b"CKPTJRN1", "version 1, RAM and DISK fields"),
    (
        b"CKPTJRN2",
        "version 2, by an executor that ran every scheduled forward step",
    ),
];
const HEADER: usize = 8 + 8 + 4;

/// What a journal entry keeps of one stored level.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) enum LevelRecord<S> {
    /// The executor had no store for the level.
    #[default]
    NoStore,
    /// The snapshots of a store that does not outlive the process, copied.
    Snapshots(Vec<(Step, Checkpoint<S>)>),
    /// Where a durable store's snapshots are on its medium.
    Manifest(Vec<(Step, String)>),
}

/// One journal entry, as written. It starts with `spec`, `problem`,
/// `initial_crc` and `completed`, which [`Journal::completed_actions`]
/// reads alone.
#[derive(Serialize)]
pub(super) struct EntryRef<'a, S, A, G> {
    pub(super) spec: &'a str,
    pub(super) problem: &'a str,
    pub(super) initial_crc: u32,
    pub(super) completed: u64,
    pub(super) live: &'a Option<(Step, S)>,
    pub(super) deps: Vec<(Step, &'a S)>,
    pub(super) adjoint: &'a Option<A>,
    pub(super) stats: &'a ExecutionStats,
    pub(super) accumulators: G,
    pub(super) levels: PerLevel<LevelRecord<S>>,
}

/// One journal entry, as read (the same fields).
#[derive(Deserialize)]
pub(super) struct Entry<S, A, G> {
    pub(super) spec: String,
    pub(super) problem: String,
    pub(super) initial_crc: u32,
    pub(super) completed: u64,
    pub(super) live: Option<(Step, S)>,
    pub(super) deps: Vec<(Step, S)>,
    pub(super) adjoint: Option<A>,
    pub(super) stats: ExecutionStats,
    pub(super) accumulators: G,
    pub(super) levels: PerLevel<LevelRecord<S>>,
}

/// Reads and decodes the journal entry in `path`.
pub(super) fn decode_entry<S, A, G>(path: &Path) -> Result<Entry<S, A, G>, JournalError>
where
    S: DeserializeOwned,
    A: DeserializeOwned,
    G: DeserializeOwned,
{
    let bytes = fs::read(path).map_err(|source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    decode_entry_bytes(path, &bytes)
}

/// Checks the bytes of a journal file (read from `path`) and decodes its
/// entry.
fn decode_entry_bytes<S, A, G>(path: &Path, bytes: &[u8]) -> Result<Entry<S, A, G>, JournalError>
where
    S: DeserializeOwned,
    A: DeserializeOwned,
    G: DeserializeOwned,
{
    decode_bounded(unseal(path, bytes)?).map_err(|e| JournalError::Corrupted {
        path: path.to_path_buf(),
        reason: format!("cannot decode the entry: {e}"),
    })
}

/// Decodes a journal file's bytes as an entry with states `S`, adjoint `A`
/// and accumulators `G`, as a resumed run does.
#[cfg(feature = "fuzzing")]
pub(crate) fn decode_journal_file<S, A, G>(bytes: &[u8]) -> Result<(), JournalError>
where
    S: DeserializeOwned,
    A: DeserializeOwned,
    G: DeserializeOwned,
{
    decode_entry_bytes::<S, A, G>(Path::new(FILE), bytes).map(drop)
}

/// A journal file's bytes around `payload`: magic, length, CRC-32.
pub(super) fn seal(payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    bytes.extend_from_slice(payload);
    bytes
}

/// [`seal`], for fuzzing the decoder behind the checksum.
#[cfg(feature = "fuzzing")]
pub(crate) fn seal_journal(payload: &[u8]) -> Vec<u8> {
    seal(payload)
}

pub(super) fn read_sealed(path: &Path) -> Result<Vec<u8>, JournalError> {
    let bytes = fs::read(path).map_err(|source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    unseal(path, &bytes).map(<[u8]>::to_vec)
}

/// The payload of a journal file's bytes, once its header and checksum are
/// checked.
fn unseal<'b>(path: &Path, bytes: &'b [u8]) -> Result<&'b [u8], JournalError> {
    let corrupted = |reason: String| JournalError::Corrupted {
        path: path.to_path_buf(),
        reason,
    };
    if let Some((_, written)) = OLDER.iter().find(|(magic, _)| bytes.starts_with(*magic)) {
        return Err(corrupted(format!(
            "a journal of an older format ({written}); finish that run with the release \
             that wrote it, or start it anew"
        )));
    }
    if bytes.len() < HEADER || &bytes[..8] != MAGIC {
        return Err(corrupted("not a journal (bad header)".into()));
    }
    let len = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes"));
    if (bytes.len() - HEADER) as u64 != len {
        return Err(corrupted(format!(
            "truncated: {} bytes, header says {len}",
            bytes.len() - HEADER
        )));
    }
    if crc32fast::hash(&bytes[HEADER..]) != crc {
        return Err(corrupted("checksum mismatch".into()));
    }
    Ok(&bytes[HEADER..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_of_an_older_format_is_named_as_such() {
        let path = Path::new("journal");
        for (magic, _) in OLDER {
            let mut bytes = seal(b"payload");
            bytes[..8].copy_from_slice(magic);
            let err = unseal(path, &bytes).unwrap_err().to_string();
            assert!(err.contains("older format"), "{err}");
        }
        let err = unseal(path, b"CKPTSNP1 and more bytes").unwrap_err();
        assert!(err.to_string().contains("bad header"), "{err}");
        assert!(unseal(path, &seal(b"payload")).is_ok());
    }
}
