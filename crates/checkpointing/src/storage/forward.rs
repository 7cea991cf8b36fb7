//! [`forward_to_inner_store!`](crate::forward_to_inner_store): the
//! bookkeeping methods of a wrapper store, passed to the store it wraps.
//!
//! A wrapper (compression, quantisation, MPI agreement, device transfer)
//! changes how values are saved and loaded; which steps are held, their
//! traffic and their durability are its inner store's. The trait's provided
//! defaults describe a store on its own, so a wrapper names the methods it
//! passes on instead of writing each by hand.

/// Implements the listed [`SnapshotStore`](crate::SnapshotStore) methods of
/// a wrapper by calling its field `inner` (any name): `remove`,
/// `held_steps`, `contains`, `prefetch`, `flush`, `background_io`,
/// `resident_bytes`, `stats`, `as_durable`, `drop_cached`. Without a list,
/// all ten. Use it inside the wrapper's
/// `impl SnapshotStore<T>`.
///
/// ```
/// use checkpointing::{MemoryStore, SnapshotStore, Step, StorageError};
///
/// /// Counts saves, and is otherwise its inner store.
/// struct Counting<St> { inner: St, saves: u64 }
///
/// impl<T, St: SnapshotStore<T>> SnapshotStore<T> for Counting<St> {
///     fn save(&mut self, step: Step, value: T) -> Result<(), StorageError> {
///         self.saves += 1;
///         self.inner.save(step, value)
///     }
///     fn load(&mut self, step: Step) -> Result<T, StorageError> {
///         self.inner.load(step)
///     }
///     checkpointing::forward_to_inner_store!(inner);
/// }
///
/// let mut store = Counting { inner: MemoryStore::new(), saves: 0 };
/// store.save(3, 1.0_f64).unwrap();
/// assert_eq!((store.held_steps(), store.saves), (vec![3], 1));
/// ```
#[macro_export]
macro_rules! forward_to_inner_store {
    ($inner:ident) => {
        $crate::forward_to_inner_store!(
            $inner: remove, held_steps, contains, prefetch, flush, background_io,
            resident_bytes, stats, as_durable, drop_cached
        );
    };
    ($inner:ident: $($method:ident),+ $(,)?) => {
        $( $crate::forward_to_inner_store!(@one $inner $method); )+
    };
    (@one $inner:ident remove) => {
        fn remove(&mut self, step: $crate::Step) -> ::core::result::Result<(), $crate::StorageError> {
            self.$inner.remove(step)
        }
    };
    (@one $inner:ident held_steps) => {
        fn held_steps(&self) -> ::std::vec::Vec<$crate::Step> {
            self.$inner.held_steps()
        }
    };
    (@one $inner:ident contains) => {
        fn contains(&self, step: $crate::Step) -> bool {
            self.$inner.contains(step)
        }
    };
    (@one $inner:ident prefetch) => {
        fn prefetch(&mut self, step: $crate::Step) {
            self.$inner.prefetch(step)
        }
    };
    (@one $inner:ident flush) => {
        fn flush(&mut self) -> ::core::result::Result<(), $crate::StorageError> {
            self.$inner.flush()
        }
    };
    (@one $inner:ident background_io) => {
        fn background_io(
            &self,
            snapshot_bytes: u64,
        ) -> ::core::option::Option<$crate::plan::BackgroundIo> {
            self.$inner.background_io(snapshot_bytes)
        }
    };
    (@one $inner:ident resident_bytes) => {
        fn resident_bytes(&self) -> u64 {
            self.$inner.resident_bytes()
        }
    };
    (@one $inner:ident stats) => {
        fn stats(&self) -> $crate::StoreStats {
            self.$inner.stats()
        }
    };
    (@one $inner:ident as_durable) => {
        fn as_durable(&mut self) -> ::core::option::Option<&mut dyn $crate::DurableStore> {
            self.$inner.as_durable()
        }
    };
    (@one $inner:ident drop_cached) => {
        fn drop_cached(
            &mut self,
            step: $crate::Step,
        ) -> ::core::result::Result<bool, $crate::StorageError> {
            self.$inner.drop_cached(step)
        }
    };
}
