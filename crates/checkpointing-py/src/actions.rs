//! The action classes: `CheckpointAction` and its subclasses `Forward`,
//! `Reverse`, `Copy`, `Move`, `EndForward` and `EndReverse`, and the Python
//! object of a Rust [`Action`].

use checkpointing::Action;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::registry::storage_object;

/// Base class of the actions: `args` holds the constructor's arguments.
#[pyclass(subclass, module = "adjoint_checkpoints", name = "CheckpointAction")]
pub struct CheckpointAction {
    #[pyo3(get)]
    args: Py<PyTuple>,
}

#[pymethods]
impl CheckpointAction {
    #[new]
    #[pyo3(signature = (*args))]
    fn new(args: Bound<'_, PyTuple>) -> Self {
        Self {
            args: args.unbind(),
        }
    }

    /// Actions compare by `==` as in the reference (which makes them
    /// unhashable).
    #[classattr]
    const __hash__: Option<Py<PyAny>> = None;

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let py = slf.py();
        let maxsize = py.import("sys")?.getattr("maxsize")?;
        let args = slf.borrow().args.clone_ref(py);
        let mut parts = Vec::new();
        for arg in args.bind(py).iter() {
            parts.push(if arg.eq(&maxsize)? {
                "sys.maxsize".to_owned()
            } else {
                arg.repr()?.to_string()
            });
        }
        Ok(format!("{}({})", slf.get_type().name()?, parts.join(", ")))
    }

    /// `isinstance(self, other) and self.args == other.args`, the
    /// reference's rule: comparing two actions raises `TypeError` there.
    fn __eq__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = slf.py();
        let isinstance = py.import("builtins")?.getattr("isinstance")?;
        if !isinstance.call1((slf, other))?.is_truthy()? {
            return Ok(false);
        }
        if let Ok(class) = other.cast::<pyo3::types::PyType>() {
            // A class passes `isinstance` but has no `args` in the reference.
            return Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "type object '{}' has no attribute 'args'",
                class.name()?
            )));
        }
        slf.borrow().args.bind(py).eq(other.getattr("args")?)
    }

    fn __ne__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        Self::__eq__(slf, other).map(|equal| !equal)
    }
}

/// `Forward(n0, n1, write_ics, write_adj_deps, storage)`.
#[pyclass(extends = CheckpointAction, get_all, module = "adjoint_checkpoints", name = "Forward")]
pub struct Forward {
    n0: Py<PyAny>,
    n1: Py<PyAny>,
    write_ics: Py<PyAny>,
    write_adj_deps: Py<PyAny>,
    storage: Py<PyAny>,
}

#[pymethods]
impl Forward {
    #[new]
    fn new(
        py: Python<'_>,
        n0: Py<PyAny>,
        n1: Py<PyAny>,
        write_ics: Py<PyAny>,
        write_adj_deps: Py<PyAny>,
        storage: Py<PyAny>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let args = PyTuple::new(
            py,
            [&n0, &n1, &write_ics, &write_adj_deps, &storage].map(|a| a.clone_ref(py)),
        )?;
        Ok(
            PyClassInitializer::from(CheckpointAction::new(args)).add_subclass(Self {
                n0,
                n1,
                write_ics,
                write_adj_deps,
                storage,
            }),
        )
    }

    /// The steps `n0, ..., n1 - 1`.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let range = py.import("builtins")?.getattr("range")?;
        range
            .call1((&self.n0, &self.n1))?
            .try_iter()
            .map(Bound::into_any)
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.n1.bind(py).sub(&self.n0)?.extract()
    }

    fn __contains__(&self, py: Python<'_>, step: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.n0.bind(py).le(step)? && step.lt(&self.n1)?)
    }
}

/// `Reverse(n1, n0, clear_adj_deps)`.
#[pyclass(extends = CheckpointAction, get_all, module = "adjoint_checkpoints", name = "Reverse")]
pub struct Reverse {
    n1: Py<PyAny>,
    n0: Py<PyAny>,
    clear_adj_deps: Py<PyAny>,
}

#[pymethods]
impl Reverse {
    #[new]
    fn new(
        py: Python<'_>,
        n1: Py<PyAny>,
        n0: Py<PyAny>,
        clear_adj_deps: Py<PyAny>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let args = PyTuple::new(py, [&n1, &n0, &clear_adj_deps].map(|a| a.clone_ref(py)))?;
        Ok(
            PyClassInitializer::from(CheckpointAction::new(args)).add_subclass(Self {
                n1,
                n0,
                clear_adj_deps,
            }),
        )
    }

    /// The steps `n1 - 1` down to `n0`.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let range = py.import("builtins")?.getattr("range")?;
        let (n1, n0) = (self.n1.bind(py), self.n0.bind(py));
        range
            .call1((n1.sub(1)?, n0.sub(1)?, -1))?
            .try_iter()
            .map(Bound::into_any)
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.n1.bind(py).sub(&self.n0)?.extract()
    }

    fn __contains__(&self, py: Python<'_>, step: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.n0.bind(py).le(step)? && step.lt(&self.n1)?)
    }
}

/// `Copy(n, from_storage, to_storage)` and `Move(...)`: the same fields.
macro_rules! transfer_action {
    ($rust:ident, $name:literal, $doc:literal) => {
        #[doc = $doc]
        #[pyclass(extends = CheckpointAction, get_all, module = "adjoint_checkpoints", name = $name)]
        pub struct $rust {
            n: Py<PyAny>,
            from_storage: Py<PyAny>,
            to_storage: Py<PyAny>,
        }

        #[pymethods]
        impl $rust {
            #[new]
            fn new(
                py: Python<'_>,
                n: Py<PyAny>,
                from_storage: Py<PyAny>,
                to_storage: Py<PyAny>,
            ) -> PyResult<PyClassInitializer<Self>> {
                let args = PyTuple::new(
                    py,
                    [&n, &from_storage, &to_storage].map(|a| a.clone_ref(py)),
                )?;
                Ok(
                    PyClassInitializer::from(CheckpointAction::new(args)).add_subclass(Self {
                        n,
                        from_storage,
                        to_storage,
                    }),
                )
            }
        }
    };
}

transfer_action!(
    Copy,
    "Copy",
    "`Copy(n, from_storage, to_storage)`: the data stays in `from_storage`."
);
transfer_action!(
    Move,
    "Move",
    "`Move(n, from_storage, to_storage)`: the data leaves `from_storage`."
);

/// `EndForward()` and `EndReverse()`.
macro_rules! end_action {
    ($rust:ident, $name:literal, $doc:literal) => {
        #[doc = $doc]
        #[pyclass(extends = CheckpointAction, module = "adjoint_checkpoints", name = $name)]
        pub struct $rust;

        #[pymethods]
        impl $rust {
            #[new]
            fn new(py: Python<'_>) -> PyClassInitializer<Self> {
                PyClassInitializer::from(CheckpointAction::new(PyTuple::empty(py)))
                    .add_subclass(Self)
            }
        }
    };
}

end_action!(
    EndForward,
    "EndForward",
    "`EndForward()`: the forward has reached its last step."
);
end_action!(
    EndReverse,
    "EndReverse",
    "`EndReverse()`: the adjoint has reached step 0."
);

/// The Python object of a Rust action.
pub(crate) fn action_object(py: Python<'_>, action: Action) -> PyResult<Py<PyAny>> {
    fn object<T: pyo3::PyClass>(
        py: Python<'_>,
        init: PyClassInitializer<T>,
    ) -> PyResult<Py<PyAny>> {
        Ok(Bound::new(py, init)?.into_any().unbind())
    }
    let int = |n: u64| -> PyResult<Py<PyAny>> { Ok(n.into_pyobject(py)?.into_any().unbind()) };
    let bool = |b: bool| {
        pyo3::types::PyBool::new(py, b)
            .to_owned()
            .into_any()
            .unbind()
    };
    match action {
        Action::Forward {
            n0,
            n1,
            write_ics,
            write_adj_deps,
            storage,
        } => object(
            py,
            Forward::new(
                py,
                int(n0)?,
                int(n1)?,
                bool(write_ics),
                bool(write_adj_deps),
                storage_object(py, storage)?,
            )?,
        ),
        Action::Reverse {
            n1,
            n0,
            clear_adj_deps,
        } => object(
            py,
            Reverse::new(py, int(n1)?, int(n0)?, bool(clear_adj_deps))?,
        ),
        Action::Copy { n, from, to } => object(
            py,
            Copy::new(
                py,
                int(n)?,
                storage_object(py, from)?,
                storage_object(py, to)?,
            )?,
        ),
        Action::Move { n, from, to } => object(
            py,
            Move::new(
                py,
                int(n)?,
                storage_object(py, from)?,
                storage_object(py, to)?,
            )?,
        ),
        Action::EndForward => object(py, EndForward::new(py)),
        Action::EndReverse => object(py, EndReverse::new(py)),
    }
}
