//! The tools of [`super::records`]' fast path: where the quotes, delimiters and line ends of a
//! 32-byte block are, as bit masks from vector compares (SSE2 on x86-64, NEON on aarch64,
//! through the `wide` crate, no `unsafe`), and the unquoting of a record found with them, in
//! place or copied once when a field holds an escaped quote.

use wide::u8x32;

/// Narrows each field holding quotes to the text between its enclosing quotes, given the
/// positions of the record's quotes (in order). Returns whether any field holds an escaped
/// quote (`""`, the second quote of each pair then in `doubled`), or `None` when a field is
/// not quoted from its first byte to its last with its inner quotes in pairs.
pub(super) fn unquote(
    fields: &mut [(usize, usize)],
    quotes: &[usize],
    doubled: &mut Vec<usize>,
) -> Option<bool> {
    doubled.clear();
    let mut rest = quotes;
    for field in fields {
        let (start, end) = *field;
        let n = rest.iter().take_while(|&&q| q < end).count();
        let (own, after) = rest.split_at(n);
        rest = after;
        let [first, inner @ .., last] = own else {
            if own.is_empty() {
                continue;
            }
            return None;
        };
        if *first != start || *last != end - 1 {
            return None;
        }
        for pair in inner.chunks(2) {
            match pair {
                [a, b] if *b == a + 1 => doubled.push(*b),
                _ => return None,
            }
        }
        *field = (start + 1, end - 1);
    }
    Some(!doubled.is_empty())
}

/// Copies the fields of `line` into `out` back to back, leaving out the bytes at `doubled`
/// (the second quote of each escaped pair), and points `fields` at the copies.
pub(super) fn unescape(
    line: &[u8],
    fields: &mut [(usize, usize)],
    doubled: &[usize],
    out: &mut Vec<u8>,
) {
    out.clear();
    let mut skips = doubled.iter().copied().peekable();
    for field in fields {
        let (mut at, end) = *field;
        let from = out.len();
        while let Some(skip) = skips.next_if(|&q| q < end) {
            out.extend_from_slice(&line[at..skip]);
            at = skip + 1;
        }
        out.extend_from_slice(&line[at..end]);
        *field = (from, out.len());
    }
}

/// Where the quotes, delimiters and line ends (`\n`, `\r`) are in the first 32 bytes of a
/// slice: bit `i` stands for byte `i`. Past the end of a shorter slice no bit is set.
pub(super) struct Masks {
    pub quotes: u32,
    pub delimiters: u32,
    pub line_ends: u32,
}

impl Masks {
    #[inline(always)]
    pub fn of(bytes: &[u8], delimiter: u8) -> Self {
        let (block, valid) = match bytes.first_chunk::<32>() {
            Some(block) => (*block, u32::MAX),
            None => {
                let mut block = [0; 32];
                block[..bytes.len()].copy_from_slice(bytes);
                (block, (1u32 << bytes.len()) - 1)
            }
        };
        let v = u8x32::new(block);
        let eq = |b: u8| v.simd_eq(u8x32::splat(b));
        Self {
            quotes: eq(b'"').to_bitmask() & valid,
            delimiters: eq(delimiter).to_bitmask() & valid,
            line_ends: (eq(b'\n') | eq(b'\r')).to_bitmask() & valid,
        }
    }
}

/// Bit `i` of the result is the XOR of bits `0..=i` of `m`: for a mask of quotes, the bytes
/// from an opening quote up to (not including) its closing one.
#[inline(always)]
pub(super) fn prefix_xor(mut m: u32) -> u32 {
    m ^= m << 1;
    m ^= m << 2;
    m ^= m << 4;
    m ^= m << 8;
    m ^= m << 16;
    m
}

/// Calls `f` with the index of every set bit of `m`, lowest first.
#[inline(always)]
pub(super) fn for_each_bit(mut m: u32, mut f: impl FnMut(usize)) {
    while m != 0 {
        f(m.trailing_zeros() as usize);
        m &= m - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_see_every_byte_of_a_block_and_nothing_past_a_short_one() {
        for len in 1..=40 {
            for pos in 0..len.min(32) {
                let mut bytes = vec![b'a'; len];
                bytes[pos] = b'"';
                bytes[len - 1 - pos.min(len - 1)] = b';';
                let m = Masks::of(&bytes, b';');
                let bit = |b: u8| {
                    (0..len.min(32))
                        .filter(|&i| bytes[i] == b)
                        .fold(0u32, |m, i| m | 1 << i)
                };
                assert_eq!(m.quotes, bit(b'"'), "{len} {pos}");
                assert_eq!(m.delimiters, bit(b';'), "{len} {pos}");
                assert_eq!(m.line_ends, 0);
            }
        }
        // Zero padding of a short block is no delimiter, even when the delimiter is zero.
        assert_eq!(Masks::of(b"a\n", 0).delimiters, 0);
        assert_eq!(Masks::of(b"a\n\r", 0).line_ends, 0b110);
        assert_eq!(prefix_xor(0b1001_0010), 0xffff_ff8e);
    }
}
