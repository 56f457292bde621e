//! The byte layouts the store writes, read and written one way: little-endian integers,
//! lengths as u32 before what they measure. A reader never panics: a field that runs past the end
//! is `None`, and so is the record it belongs to.

/// Reads fields off the front of a byte slice.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader(bytes)
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    pub fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A u32 length and that many bytes.
    pub fn sized(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        self.take(len)
    }

    /// What is left.
    pub fn rest(&self) -> &'a [u8] {
        self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Appends `bytes` after its length as a u32.
pub fn put_sized(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Exactly `N` little-endian u64s, or `None` for any other length.
pub fn u64s<const N: usize>(bytes: &[u8]) -> Option<[u64; N]> {
    if bytes.len() != N * 8 {
        return None;
    }
    let mut out = [0; N];
    for (v, chunk) in out.iter_mut().zip(bytes.chunks_exact(8)) {
        *v = u64::from_le_bytes(chunk.try_into().ok()?);
    }
    Some(out)
}

/// Writes `values` into `out` as little-endian u64s (`out` holds `8 × values.len()` bytes).
pub fn put_u64s(out: &mut [u8], values: &[u64]) {
    for (chunk, v) in out.chunks_exact_mut(8).zip(values) {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_and_a_short_one_is_none() {
        let mut out = vec![7];
        out.extend_from_slice(&9u64.to_le_bytes());
        put_sized(&mut out, b"abc");
        let mut r = Reader::new(&out);
        assert_eq!(
            (r.u8(), r.u64(), r.sized()),
            (Some(7), Some(9), Some(&b"abc"[..]))
        );
        assert!(r.is_empty());
        assert_eq!(r.u32(), None);
        let mut cut = Reader::new(&out[..out.len() - 1]);
        assert_eq!((cut.u8(), cut.u64(), cut.sized()), (Some(7), Some(9), None));
    }

    #[test]
    fn fixed_width_records_have_exactly_their_length() {
        let mut out = [0; 16];
        put_u64s(&mut out, &[1, u64::MAX]);
        assert_eq!(u64s::<2>(&out), Some([1, u64::MAX]));
        assert_eq!(u64s::<2>(&out[..15]), None);
        assert_eq!(u64s::<1>(&out), None);
    }
}
