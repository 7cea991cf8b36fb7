//! Why a store operation failed.

use std::path::PathBuf;

use crate::action::Step;

/// Why a store could not save, load or remove a snapshot. Every variant
/// names the step.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// Saving would exceed the store's budget.
    #[error("snapshot of step {step}: store budget exceeded ({what})")]
    BudgetExceeded {
        /// The step.
        step: Step,
        /// Which budget, with numbers.
        what: String,
    },
    /// A snapshot for this step is already stored.
    #[error("snapshot of step {step} is already stored")]
    AlreadyStored {
        /// The step.
        step: Step,
    },
    /// No snapshot for this step (never saved, removed, or its file is gone).
    #[error("no snapshot of step {step}{}", path.as_ref().map(|p| format!(" (missing file {})", p.display())).unwrap_or_default())]
    Missing {
        /// The step.
        step: Step,
        /// The file that should hold it, for disk stores.
        path: Option<PathBuf>,
    },
    /// The snapshot's file is truncated or its checksum does not match.
    #[error("snapshot of step {step} in {} is corrupted: {reason}", path.display())]
    Corrupted {
        /// The step.
        step: Step,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The disk is full; no partial snapshot was left behind.
    #[error("snapshot of step {step}: disk full writing {}", path.display())]
    DiskFull {
        /// The step.
        step: Step,
        /// The file being written.
        path: PathBuf,
    },
    /// Another I/O error.
    #[error("snapshot of step {step}: I/O error on {}: {source}", path.display())]
    Io {
        /// The step.
        step: Step,
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The store's backend failed (another rank of a distributed run, an
    /// accelerator's driver, a library): the backend's own error, typed by
    /// the crate that defines the store.
    ///
    /// ```
    /// use checkpointing::StorageError;
    /// #[derive(Debug, thiserror::Error)]
    /// #[error("link down")]
    /// struct LinkDown;
    /// let error = StorageError::backend(7, LinkDown);
    /// assert_eq!(error.to_string(), "snapshot of step 7: link down");
    /// assert!(error.backend_source::<LinkDown>().is_some());
    /// ```
    #[error("snapshot of step {step}: {source}")]
    Backend {
        /// The step.
        step: Step,
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// The snapshot files' directory (with this store's file prefix) is in
    /// use by another run: its lock is held.
    #[error(
        "snapshot of step {step}: {} is in use by another run ({owner}); give each run its own directory or file prefix",
        lock.display()
    )]
    Locked {
        /// The step.
        step: Step,
        /// The lock file.
        lock: PathBuf,
        /// Who holds it, as its lock file says: `pid P on host H`.
        owner: String,
    },
    /// The value could not be serialized or deserialized.
    #[error("snapshot of step {step}: cannot (de)serialize: {reason}")]
    Serialization {
        /// The step.
        step: Step,
        /// Why.
        reason: String,
    },
}

impl StorageError {
    /// A [`StorageError::Backend`] for `step` wrapping `source`.
    pub fn backend(step: Step, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Backend {
            step,
            source: Box::new(source),
        }
    }

    /// The backend's error, if this is a [`StorageError::Backend`] holding
    /// an `E`.
    pub fn backend_source<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match self {
            Self::Backend { source, .. } => source.downcast_ref::<E>(),
            _ => None,
        }
    }

    /// The step the error is about.
    ///
    /// ```
    /// assert_eq!(checkpointing::StorageError::AlreadyStored { step: 4 }.step(), 4);
    /// ```
    pub fn step(&self) -> Step {
        match self {
            Self::BudgetExceeded { step, .. }
            | Self::AlreadyStored { step }
            | Self::Missing { step, .. }
            | Self::Corrupted { step, .. }
            | Self::DiskFull { step, .. }
            | Self::Io { step, .. }
            | Self::Backend { step, .. }
            | Self::Locked { step, .. }
            | Self::Serialization { step, .. } => *step,
        }
    }
}
