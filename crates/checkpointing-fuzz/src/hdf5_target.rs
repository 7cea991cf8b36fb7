//! The HDF5 store's reading of a snapshot: a dataset under `/snapshots`
//! whose shape, element type, data and attributes (`step`, `crc32`, `ics`)
//! come from the fuzzer, written with the HDF5 library as another program
//! (or a damaged disk) could, then opened and read by `Hdf5Store`.

use checkpointing::{Checkpoint, SnapshotStore};
use checkpointing_store::Hdf5Store;

/// Reads the fuzzer's bytes as a description of one dataset.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }

    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |v, k| v | (self.byte() as u64) << (8 * k))
    }
}

/// How an attribute is written.
fn write_attr(dataset: &hdf5::Dataset, name: &str, kind: u8, value: u64) -> hdf5::Result<()> {
    match kind % 5 {
        0 => Ok(()), // missing
        1 => dataset.new_attr::<u64>().create(name)?.write_scalar(&value),
        2 => dataset
            .new_attr::<u32>()
            .create(name)?
            .write_scalar(&(value as u32)),
        3 => dataset
            .new_attr::<u8>()
            .create(name)?
            .write_scalar(&(value as u8)),
        _ => dataset
            .new_attr::<f64>()
            .shape(((value % 4) as usize,))
            .create(name)?
            .write_raw(&vec![value as f64; (value % 4) as usize]),
    }
}

/// Writes the described dataset as step 5's snapshot and reads it back.
pub fn hdf5_snapshot(data: &[u8]) {
    let mut input = Reader(data);
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("fuzz.h5");
    let (element, rows_byte, cols_byte) = (input.byte(), input.byte(), input.byte());
    // Zero-width rows may be many (an empty state); otherwise a small shape.
    let cols = (cols_byte % 9) as usize;
    let rows = if cols == 0 && rows_byte & 0x80 != 0 {
        1usize << (rows_byte & 0x3f)
    } else {
        (rows_byte % 5) as usize
    };
    let attrs: Vec<(u8, u64)> = (0..3).map(|_| (input.byte(), input.u64())).collect();
    let values: Vec<f64> = input
        .0
        .chunks(8)
        .map(|c| f64::from_le_bytes(std::array::from_fn(|k| c.get(k).copied().unwrap_or(0))))
        .chain(std::iter::repeat(0.0))
        .take(rows.saturating_mul(cols).min(1 << 16))
        .collect();
    let written = (|| {
        let file = hdf5::File::create(&path)?;
        let group = file.create_group("snapshots")?;
        let name = "step-00000000000000000005";
        let dataset = match element % 3 {
            0 => {
                let d = group
                    .new_dataset::<f64>()
                    .shape((rows, cols))
                    .create(name)?;
                if rows * cols == values.len() {
                    d.write_raw(&values)?;
                }
                d
            }
            1 => {
                let ints: Vec<i32> = values.iter().map(|&v| v as i32).collect();
                let d = group
                    .new_dataset::<i32>()
                    .shape((rows, cols))
                    .create(name)?;
                if rows * cols == ints.len() {
                    d.write_raw(&ints)?;
                }
                d
            }
            _ => group
                .new_dataset::<f64>()
                .shape((rows, cols, 1))
                .create(name)?,
        };
        let correct_crc = {
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            crc32fast::hash(&bytes)
        };
        let [(step_kind, step), (crc_kind, crc), (ics_kind, ics)] = [attrs[0], attrs[1], attrs[2]];
        // Mostly the right step and checksum, so that reading goes on.
        let step = if step & 1 == 0 { 5 } else { step };
        let crc = if crc & 1 == 0 {
            correct_crc as u64
        } else {
            crc
        };
        write_attr(&dataset, "step", step_kind, step)?;
        write_attr(&dataset, "crc32", crc_kind, crc)?;
        write_attr(&dataset, "ics", ics_kind, ics)?;
        file.flush()
    })();
    if written.is_err() {
        return;
    }
    if let Ok(mut store) = Hdf5Store::<f64>::open(&path) {
        let _: Result<Checkpoint<Vec<f64>>, _> = store.load(5);
    }
    if let Ok(mut store) = Hdf5Store::<f64>::open(&path) {
        let _: Result<Vec<f64>, _> = store.load(5);
    }
}
