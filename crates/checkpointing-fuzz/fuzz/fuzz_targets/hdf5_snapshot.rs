#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| checkpointing_fuzz::hdf5_snapshot(data));
