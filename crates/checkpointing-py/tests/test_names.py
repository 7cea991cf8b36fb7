"""The package's names: our API at ``checkpointing``, the reference's names
under ``checkpointing.checkpoint_schedules``, and the reference's names at
the top level as deprecated spellings of the same classes."""

import warnings

import pytest

import checkpointing
import checkpointing.checkpoint_schedules as drop_in

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
    assert not set(checkpointing.__all__) & (set(RENAMED) | {"RevolveCheckpointSchedule"})
    for name in checkpointing.__all__:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            getattr(checkpointing, name)


@pytest.mark.parametrize("old, new", sorted(RENAMED.items()))
def test_an_old_spelling_warns_and_gives_the_same_class(old, new):
    with pytest.warns(DeprecationWarning, match=f"checkpointing.{old} is deprecated: use checkpointing.{new}"):
        cls = getattr(checkpointing, old)
    assert cls is getattr(checkpointing, new) is getattr(drop_in, old)


def test_the_revolve_base_class_moved_to_the_drop_in():
    from checkpointing.checkpoint_schedules.hrevolve import RevolveCheckpointSchedule

    with pytest.warns(DeprecationWarning, match="checkpointing.checkpoint_schedules.hrevolve import RevolveCheckpointSchedule"):
        cls = checkpointing.RevolveCheckpointSchedule
    assert cls is RevolveCheckpointSchedule
    assert issubclass(checkpointing.Revolve, cls)


def test_from_import_of_an_old_spelling_warns():
    with pytest.warns(DeprecationWarning):
        from checkpointing import MultistageCheckpointSchedule
    assert MultistageCheckpointSchedule is checkpointing.Multistage


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Nonexistent'"):
        checkpointing.Nonexistent
