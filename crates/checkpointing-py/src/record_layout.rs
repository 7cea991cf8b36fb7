//! The layout and codes of `checkpointing::ActionRecord`, given to Python so
//! that `_arrays.py` builds its NumPy dtype and reads the codes from the
//! Rust definitions instead of a copy of them.

use std::mem::{offset_of, size_of};

use checkpointing::{ActionRecord, StorageLevel};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `RECORD_DTYPE` (a NumPy dtype specification: names, formats, offsets,
/// itemsize; native byte order), `RECORD_KINDS` (action name to `kind`
/// code), `RECORD_FLAGS` (flag name to bit) and `STORAGE_CODES` (code to
/// `StorageType` member name).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let fields: [(&str, &str, usize); 7] = [
        ("n0", "=u8", offset_of!(ActionRecord, n0)),
        ("n1", "=u8", offset_of!(ActionRecord, n1)),
        ("kind", "u1", offset_of!(ActionRecord, kind)),
        ("flags", "u1", offset_of!(ActionRecord, flags)),
        ("storage", "i1", offset_of!(ActionRecord, storage)),
        ("from_storage", "i1", offset_of!(ActionRecord, from_storage)),
        ("to_storage", "i1", offset_of!(ActionRecord, to_storage)),
    ];
    let dtype = PyDict::new(py);
    dtype.set_item("names", fields.map(|f| f.0).to_vec())?;
    dtype.set_item("formats", fields.map(|f| f.1).to_vec())?;
    dtype.set_item("offsets", fields.map(|f| f.2).to_vec())?;
    dtype.set_item("itemsize", size_of::<ActionRecord>())?;
    m.add("RECORD_DTYPE", dtype)?;

    let kinds = PyDict::new(py);
    for (name, code) in [
        ("Forward", ActionRecord::FORWARD),
        ("Reverse", ActionRecord::REVERSE),
        ("Copy", ActionRecord::COPY),
        ("Move", ActionRecord::MOVE),
        ("EndForward", ActionRecord::END_FORWARD),
        ("EndReverse", ActionRecord::END_REVERSE),
    ] {
        kinds.set_item(name, code)?;
    }
    m.add("RECORD_KINDS", kinds)?;

    let flags = PyDict::new(py);
    flags.set_item("write_ics", ActionRecord::WRITE_ICS)?;
    flags.set_item("write_adj_deps", ActionRecord::WRITE_ADJ_DEPS)?;
    flags.set_item("clear_adj_deps", ActionRecord::CLEAR_ADJ_DEPS)?;
    m.add("RECORD_FLAGS", flags)?;

    let storage = PyDict::new(py);
    for level in StorageLevel::ALL {
        storage.set_item(ActionRecord::storage_code(level), level.name())?;
    }
    m.add("STORAGE_CODES", storage)?;
    Ok(())
}
