//! The durable side of a background store: its inner store's, reached
//! through the worker in order with the saves and removals.

use std::sync::mpsc;

use checkpointing::{DurableStore, Footprint, NotDurable, SnapshotStore, Step, StorageError};

use super::{lane_gone, AsyncStore, Write};

/// The inner store's durable side, reached through the worker in turn with
/// the saves and removals (see [`AsyncStore`]). Over an inner store that is
/// not durable ([`as_durable`](SnapshotStore::as_durable) is then `None`),
/// removals are not deferred, the manifest is empty and adopting one is an
/// error.
impl<T, St> DurableStore for AsyncStore<T, St>
where
    T: Footprint + Send + 'static,
    St: SnapshotStore<T> + Send + 'static,
{
    fn defer_removals(&mut self) {
        if self.durable {
            self.deferring = true;
            // A dead worker is reported by the next operation that waits.
            if let Ok(seq) = self.send_write(Write::Durable(Box::new(|inner: &mut St| {
                if let Some(durable) = inner.as_durable() {
                    durable.defer_removals();
                }
            }))) {
                self.barrier = seq;
            }
        }
    }

    fn complete_removals(&mut self) -> Result<(), StorageError> {
        if !self.durable {
            return Ok(());
        }
        let done = self
            .on_durable(|durable| durable.complete_removals())?
            .unwrap_or(Ok(()));
        self.check()?;
        done?;
        self.pending_removals = false;
        Ok(())
    }

    fn has_pending_removals(&mut self) -> bool {
        self.pending_removals
    }

    fn manifest(&mut self) -> Vec<(Step, String)> {
        // A dead worker makes an empty manifest; the flush the journal does
        // first has reported it.
        self.on_durable(|durable| durable.manifest())
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    fn adopt(&mut self, manifest: &[(Step, String)]) -> Result<(), StorageError> {
        self.wanted.clear();
        self.prefetched().clear();
        let manifest = manifest.to_vec();
        let (reply, answer) = mpsc::sync_channel(1);
        self.barrier = self.send_write(Write::Durable(Box::new(move |inner: &mut St| {
            let adopted = match inner.as_durable() {
                Some(durable) => durable.adopt(&manifest),
                None => Err(StorageError::backend(0, NotDurable)),
            };
            let _ = reply.send((adopted, inner.held_steps()));
        })))?;
        let (adopted, held) = answer.recv().map_err(|_| lane_gone())?;
        self.check()?;
        adopted?;
        self.held = held.into_iter().collect();
        self.saved_at.clear();
        Ok(())
    }
}
