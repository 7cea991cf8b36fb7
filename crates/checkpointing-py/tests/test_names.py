"""The package's names: our API at ``adjoint_checkpoints``, the reference's names
under ``adjoint_checkpoints.checkpoint_schedules``, and the reference's names at
the top level as deprecated spellings of the same classes."""

import warnings

import pytest

import adjoint_checkpoints
import adjoint_checkpoints.checkpoint_schedules as drop_in

RENAMED = {
    "CheckpointAction": "Action",
    "CheckpointSchedule": "Schedule",
    "MultistageCheckpointSchedule": "Multistage",
    "MixedCheckpointSchedule": "Mixed",
    "TwoLevelCheckpointSchedule": "TwoLevel",
    "SingleMemoryStorageSchedule": "SingleMemory",
    "SingleDiskStorageSchedule": "SingleDisk",
    "NoneCheckpointSchedule": "NoneSchedule",
}


def test_the_top_level_exports_only_our_names():
    assert not set(adjoint_checkpoints.__all__) & (set(RENAMED) | {"RevolveCheckpointSchedule"})
    for name in adjoint_checkpoints.__all__:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            getattr(adjoint_checkpoints, name)


@pytest.mark.parametrize("old, new", sorted(RENAMED.items()))
def test_an_old_spelling_warns_and_gives_the_same_class(old, new):
    with pytest.warns(DeprecationWarning, match=f"adjoint_checkpoints.{old} is deprecated: use adjoint_checkpoints.{new}"):
        cls = getattr(adjoint_checkpoints, old)
    assert cls is getattr(adjoint_checkpoints, new) is getattr(drop_in, old)


def test_the_revolve_base_class_moved_to_the_drop_in():
    from adjoint_checkpoints.checkpoint_schedules.hrevolve import RevolveCheckpointSchedule

    with pytest.warns(DeprecationWarning, match="adjoint_checkpoints.checkpoint_schedules.hrevolve import RevolveCheckpointSchedule"):
        cls = adjoint_checkpoints.RevolveCheckpointSchedule
    assert cls is RevolveCheckpointSchedule
    assert issubclass(adjoint_checkpoints.Revolve, cls)


def test_from_import_of_an_old_spelling_warns():
    with pytest.warns(DeprecationWarning):
        from adjoint_checkpoints import MultistageCheckpointSchedule
    assert MultistageCheckpointSchedule is adjoint_checkpoints.Multistage


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Nonexistent'"):
        adjoint_checkpoints.Nonexistent
