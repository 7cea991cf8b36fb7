//! [`PerLevel`]: one value per storage level that holds checkpoints.
//!
//! The stored levels are data ([`StorageLevel::STORED`]), not fields: costs,
//! budgets, statistics and stores are kept in a [`PerLevel`], so a new level
//! is a new [`StorageLevel`] variant and an entry of `STORED`, not a new field
//! in every struct that counts something per level.

use std::fmt;
use std::ops::{Index, IndexMut};

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::action::StorageLevel;

/// Number of levels that hold checkpoints.
const STORED_LEVELS: usize = StorageLevel::STORED.len();

/// One `T` for each level that holds checkpoints ([`StorageLevel::STORED`]:
/// DEVICE, RAM, DISK).
///
/// Indexing by WORK or NONE panics, as indexing a slice out of bounds does;
/// [`PerLevel::get`] returns `None` for them instead. In serde formats it is
/// a map from the lower-case level name (`"ram"`, `"disk"`, `"device"`) to the
/// value, so a struct that flattens it keeps one field per level in JSON.
///
/// ```
/// use checkpointing_schedule::{PerLevel, StorageLevel};
/// let mut budget: PerLevel<u64> = PerLevel::default();
/// budget[StorageLevel::Ram] = 4;
/// assert_eq!(budget[StorageLevel::Ram], 4);
/// assert_eq!(budget.get(StorageLevel::Work), None);
/// assert_eq!(budget.iter().map(|(_, n)| n).sum::<u64>(), 4);
/// assert_eq!(serde_json::to_string(&budget).unwrap(), r#"{"device":0,"ram":4,"disk":0}"#);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PerLevel<T> {
    values: [T; STORED_LEVELS],
}

/// The position of `level` in [`StorageLevel::STORED`].
fn slot(level: StorageLevel) -> Option<usize> {
    StorageLevel::STORED.iter().position(|&l| l == level)
}

impl<T> PerLevel<T> {
    /// A value for each stored level, from `value(level)`.
    ///
    /// ```
    /// use checkpointing_schedule::{PerLevel, StorageLevel};
    /// let names = PerLevel::from_fn(|level| level.name());
    /// assert_eq!(names[StorageLevel::Disk], "DISK");
    /// ```
    pub fn from_fn(mut value: impl FnMut(StorageLevel) -> T) -> Self {
        Self {
            values: StorageLevel::STORED.map(&mut value),
        }
    }

    /// The value of `level`, or `None` if the level holds no checkpoints
    /// (WORK, NONE).
    pub fn get(&self, level: StorageLevel) -> Option<&T> {
        slot(level).map(|i| &self.values[i])
    }

    /// The value of `level`, mutable, or `None` for WORK and NONE.
    pub fn get_mut(&mut self, level: StorageLevel) -> Option<&mut T> {
        slot(level).map(|i| &mut self.values[i])
    }

    /// Each stored level with its value, in the order of
    /// [`StorageLevel::STORED`].
    pub fn iter(&self) -> impl Iterator<Item = (StorageLevel, &T)> {
        StorageLevel::STORED.into_iter().zip(&self.values)
    }

    /// Each stored level with its value, mutable.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (StorageLevel, &mut T)> {
        StorageLevel::STORED.into_iter().zip(&mut self.values)
    }

    /// This value per level with `value` for `level`: a budget written as
    /// an expression.
    ///
    /// # Panics
    /// If `level` is WORK or NONE, which hold no checkpoints.
    ///
    /// ```
    /// use checkpointing_schedule::{PerLevel, StorageLevel};
    /// let snapshots = PerLevel::default().with(StorageLevel::Ram, 4).with(StorageLevel::Disk, 20);
    /// assert_eq!((snapshots[StorageLevel::Ram], snapshots[StorageLevel::Device]), (4, 0));
    /// ```
    pub fn with(mut self, level: StorageLevel, value: T) -> Self {
        self[level] = value;
        self
    }

    /// The values transformed one by one.
    ///
    /// ```
    /// use checkpointing_schedule::{PerLevel, StorageLevel};
    /// let doubled = PerLevel::from_fn(|_| 2u64).map(|n| n * 2);
    /// assert_eq!(doubled[StorageLevel::Device], 4);
    /// ```
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> PerLevel<U> {
        PerLevel {
            values: self.values.map(f),
        }
    }
}

impl<T> Index<StorageLevel> for PerLevel<T> {
    type Output = T;

    /// # Panics
    /// If `level` is WORK or NONE, which hold no checkpoints.
    fn index(&self, level: StorageLevel) -> &T {
        match self.get(level) {
            Some(value) => value,
            None => panic!("{} holds no checkpoints: no per-level value", level.name()),
        }
    }
}

impl<T> IndexMut<StorageLevel> for PerLevel<T> {
    /// # Panics
    /// If `level` is WORK or NONE, which hold no checkpoints.
    fn index_mut(&mut self, level: StorageLevel) -> &mut T {
        match slot(level) {
            Some(i) => &mut self.values[i],
            None => panic!("{} holds no checkpoints: no per-level value", level.name()),
        }
    }
}

/// The key of a level in serde maps: its name in lower case.
fn key(level: StorageLevel) -> String {
    level.name().to_ascii_lowercase()
}

impl<T: Serialize> Serialize for PerLevel<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(STORED_LEVELS))?;
        for (level, value) in self.iter() {
            map.serialize_entry(&key(level), value)?;
        }
        map.end()
    }
}

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for PerLevel<T> {
    /// A map from level names to values; a level left out takes
    /// `T::default()`, an unknown or repeated name is an error.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LevelMap<T>(std::marker::PhantomData<T>);

        impl<'de, T: Deserialize<'de> + Default> Visitor<'de> for LevelMap<T> {
            type Value = PerLevel<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map from storage levels (device, ram, disk) to values")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut values = PerLevel::<Option<T>>::default();
                while let Some(name) = map.next_key::<String>()? {
                    let level = StorageLevel::STORED
                        .into_iter()
                        .find(|&l| key(l) == name)
                        .ok_or_else(|| {
                            de::Error::unknown_field(&name, &["device", "ram", "disk"])
                        })?;
                    if values[level].replace(map.next_value()?).is_some() {
                        return Err(de::Error::custom(format_args!("duplicate level `{name}`")));
                    }
                }
                Ok(values.map(Option::unwrap_or_default))
            }
        }

        deserializer.deserialize_map(LevelMap(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_round_trip_and_errors() {
        let values = PerLevel::from_fn(|l| l.name().len() as u64);
        let json = serde_json::to_string(&values).unwrap();
        assert_eq!(
            serde_json::from_str::<PerLevel<u64>>(&json).unwrap(),
            values
        );
        let partial: PerLevel<u64> = serde_json::from_str(r#"{"disk":3}"#).unwrap();
        assert_eq!(
            (partial[StorageLevel::Disk], partial[StorageLevel::Ram]),
            (3, 0)
        );
        assert!(serde_json::from_str::<PerLevel<u64>>(r#"{"work":1}"#).is_err());
        assert!(serde_json::from_str::<PerLevel<u64>>(r#"{"ram":1,"ram":2}"#).is_err());
    }

    #[test]
    #[should_panic(expected = "WORK holds no checkpoints")]
    fn indexing_work_panics() {
        let _ = PerLevel::<u8>::default()[StorageLevel::Work];
    }
}
