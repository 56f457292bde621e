//! [`Field`]: an allow-listed field of a row as the decoder found it.

/// A field's value as found; a wrong JSON type is kept as `Bad` so that the verdict can say why.
/// `null` is `Absent`, as in Go.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Field<T> {
    #[default]
    Absent,
    Value(T),
    Bad,
}

impl<T> Field<T> {
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Field<U> {
        match self {
            Field::Absent => Field::Absent,
            Field::Value(v) => Field::Value(f(v)),
            Field::Bad => Field::Bad,
        }
    }

    /// Takes a repeated key's value as Go's `encoding/json` does: `null` leaves what was there,
    /// a later value replaces an earlier one, and a value of the wrong type anywhere spoils the
    /// field for good (Go returns an error for the line, whatever came before or after it).
    #[inline]
    pub fn take(&mut self, found: Field<T>) {
        if !matches!(self, Field::Bad) && !matches!(found, Field::Absent) {
            *self = found;
        }
    }

    /// [`Field::take`] for a pointer in Go's struct (Reasonix's `*bool`, `*struct`): `null`
    /// there sets it back to nil, as if the key were absent.
    #[inline]
    pub fn take_pointer(&mut self, found: Field<T>) {
        if !self.is_bad() {
            *self = found;
        }
    }

    pub fn is_bad(&self) -> bool {
        matches!(self, Field::Bad)
    }

    /// The value, if there is one of the right type.
    pub fn value(self) -> Option<T> {
        match self {
            Field::Value(v) => Some(v),
            _ => None,
        }
    }
}
