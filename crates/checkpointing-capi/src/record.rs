//! The fixed-layout types of the ABI: the action record, its codes, and the
//! cost of a replayed schedule.

use checkpointing_schedule::{ActionRecord, Cost, LevelCost, StorageLevel};

/// One action as a plain 24-byte record, the layout of
/// `checkpointing_schedule::ActionRecord`: the steps, then one byte each for
/// the kind (`CKPT_FORWARD` ...), the flags (`CKPT_WRITE_ICS` ...) and three
/// storage codes (`CKPT_RAM` ...). Unused fields are zero; `n0` and `n1`
/// both hold `n` for Copy and Move.
///
/// | kind | meaning |
/// | --- | --- |
/// | `CKPT_FORWARD` | advance the forward from `n0` to `n1`; with `CKPT_WRITE_ICS` in `flags`, first store the state at `n0` in `storage` (RAM or DISK); with `CKPT_WRITE_ADJ_DEPS`, keep what the adjoint of steps `n0..n1` needs in `storage` (WORK: in memory) |
/// | `CKPT_REVERSE` | advance the adjoint from `n1` back to `n0`; with `CKPT_CLEAR_ADJ_DEPS`, drop those adjoint dependencies afterwards |
/// | `CKPT_COPY` | copy the checkpoint of step `n0` from `from_storage` to `to_storage` (to WORK: restart the forward from it) |
/// | `CKPT_MOVE` | the same, then delete it from `from_storage` (to NONE: just delete it) |
/// | `CKPT_END_FORWARD` | the forward has reached the final step |
/// | `CKPT_END_REVERSE` | the adjoint has reached step 0 |
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CkptActionRecord {
    /// `n0` of Forward and Reverse, `n` of Copy and Move.
    pub n0: u64,
    /// `n1` of Forward and Reverse, `n` of Copy and Move.
    pub n1: u64,
    /// `CKPT_FORWARD` ... `CKPT_END_REVERSE`.
    pub kind: u8,
    /// `CKPT_WRITE_ICS`, `CKPT_WRITE_ADJ_DEPS`, `CKPT_CLEAR_ADJ_DEPS`, or'ed.
    pub flags: u8,
    /// The level of a Forward's stored data.
    pub storage: i8,
    /// The source level of a Copy or Move.
    pub from_storage: i8,
    /// The destination level of a Copy or Move.
    pub to_storage: i8,
    /// Zero.
    pub padding: [u8; 3],
}

// The two records must have one layout: batches are written in place.
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(size_of::<CkptActionRecord>() == 24);
    assert!(size_of::<ActionRecord>() == 24);
    assert!(align_of::<CkptActionRecord>() == align_of::<ActionRecord>());
    assert!(offset_of!(CkptActionRecord, n0) == offset_of!(ActionRecord, n0));
    assert!(offset_of!(CkptActionRecord, n1) == offset_of!(ActionRecord, n1));
    assert!(offset_of!(CkptActionRecord, kind) == offset_of!(ActionRecord, kind));
    assert!(offset_of!(CkptActionRecord, flags) == offset_of!(ActionRecord, flags));
    assert!(offset_of!(CkptActionRecord, storage) == offset_of!(ActionRecord, storage));
    assert!(offset_of!(CkptActionRecord, from_storage) == offset_of!(ActionRecord, from_storage));
    assert!(offset_of!(CkptActionRecord, to_storage) == offset_of!(ActionRecord, to_storage));
    assert!(offset_of!(CkptActionRecord, padding) == offset_of!(ActionRecord, padding));
    // The codes below are the schedule crate's.
    assert!(CKPT_FORWARD == ActionRecord::FORWARD);
    assert!(CKPT_REVERSE == ActionRecord::REVERSE);
    assert!(CKPT_COPY == ActionRecord::COPY);
    assert!(CKPT_MOVE == ActionRecord::MOVE);
    assert!(CKPT_END_FORWARD == ActionRecord::END_FORWARD);
    assert!(CKPT_END_REVERSE == ActionRecord::END_REVERSE);
    assert!(CKPT_WRITE_ICS == ActionRecord::WRITE_ICS);
    assert!(CKPT_WRITE_ADJ_DEPS == ActionRecord::WRITE_ADJ_DEPS);
    assert!(CKPT_CLEAR_ADJ_DEPS == ActionRecord::CLEAR_ADJ_DEPS);
    assert!(CKPT_RAM == ActionRecord::storage_code(StorageLevel::Ram));
    assert!(CKPT_DISK == ActionRecord::storage_code(StorageLevel::Disk));
    assert!(CKPT_WORK == ActionRecord::storage_code(StorageLevel::Work));
    assert!(CKPT_NONE == ActionRecord::storage_code(StorageLevel::None));
    assert!(CKPT_DEVICE == ActionRecord::storage_code(StorageLevel::Device));
};

impl From<ActionRecord> for CkptActionRecord {
    #[inline(always)]
    fn from(r: ActionRecord) -> Self {
        Self {
            n0: r.n0,
            n1: r.n1,
            kind: r.kind,
            flags: r.flags,
            storage: r.storage,
            from_storage: r.from_storage,
            to_storage: r.to_storage,
            padding: r.padding,
        }
    }
}

/// `kind` of a Forward.
pub const CKPT_FORWARD: u8 = 0;
/// `kind` of a Reverse.
pub const CKPT_REVERSE: u8 = 1;
/// `kind` of a Copy.
pub const CKPT_COPY: u8 = 2;
/// `kind` of a Move.
pub const CKPT_MOVE: u8 = 3;
/// `kind` of an EndForward.
pub const CKPT_END_FORWARD: u8 = 4;
/// `kind` of an EndReverse.
pub const CKPT_END_REVERSE: u8 = 5;
/// Flag of a Forward: store the state at `n0` (forward restart data).
pub const CKPT_WRITE_ICS: u8 = 1;
/// Flag of a Forward: keep the adjoint dependencies of steps `n0..n1`.
pub const CKPT_WRITE_ADJ_DEPS: u8 = 2;
/// Flag of a Reverse: drop the adjoint dependencies afterwards.
pub const CKPT_CLEAR_ADJ_DEPS: u8 = 4;
/// Storage code: memory.
pub const CKPT_RAM: i8 = 0;
/// Storage code: disk.
pub const CKPT_DISK: i8 = 1;
/// Storage code: the live working state of the forward or adjoint.
pub const CKPT_WORK: i8 = -1;
/// Storage code: nowhere (a Move to NONE deletes a checkpoint).
pub const CKPT_NONE: i8 = -2;
/// Storage code: accelerator memory.
pub const CKPT_DEVICE: i8 = 2;

/// The storage level of a code, `None` for an unknown code.
pub(crate) fn level(code: i8) -> Option<StorageLevel> {
    StorageLevel::ALL
        .into_iter()
        .find(|&l| ActionRecord::storage_code(l) == code)
}

/// Traffic and occupancy of one stored level in a [`CkptCost`].
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CkptLevelCost {
    /// Checkpoints written.
    pub writes: u64,
    /// Checkpoints read (copied or moved out).
    pub reads: u64,
    /// Checkpoints deleted without being read.
    pub deletes: u64,
    /// Most checkpoints held at once.
    pub peak: u64,
}

impl From<LevelCost> for CkptLevelCost {
    fn from(c: LevelCost) -> Self {
        Self {
            writes: c.writes,
            reads: c.reads,
            deletes: c.deletes,
            peak: c.peak,
        }
    }
}

/// What a replayed schedule costs ([`ckpt_spec_cost`](crate::ckpt_spec_cost)).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CkptCost {
    /// Number of forward steps of the loop.
    pub max_n: u64,
    /// Actions replayed (up to and including the first EndReverse).
    pub actions: u64,
    /// Forward steps advanced in total.
    pub forward_steps: u64,
    /// Forward steps beyond the first `max_n`: recomputation.
    pub recomputed_steps: u64,
    /// Adjoint steps advanced.
    pub adjoint_steps: u64,
    /// Most steps whose adjoint dependencies were held in WORK at once.
    pub peak_work_steps: u64,
    /// RAM traffic and occupancy.
    pub ram: CkptLevelCost,
    /// Disk traffic and occupancy.
    pub disk: CkptLevelCost,
    /// Accelerator memory traffic and occupancy.
    pub device: CkptLevelCost,
}

impl From<Cost> for CkptCost {
    fn from(c: Cost) -> Self {
        Self {
            max_n: c.max_n,
            actions: c.actions,
            forward_steps: c.forward_steps,
            recomputed_steps: c.recomputed_steps,
            adjoint_steps: c.adjoint_steps,
            peak_work_steps: c.peak_work_steps,
            ram: c.levels[StorageLevel::Ram].into(),
            disk: c.levels[StorageLevel::Disk].into(),
            device: c.levels[StorageLevel::Device].into(),
        }
    }
}
