//! A chunk of lines hashed and decoded on both cores while the calling thread counts them, in
//! line order (BENCHMARKS.md, "Where the time goes").
//!
//! The chunk is cut into pieces of [`PIECE_LINES`] lines, which both threads claim in order.
//! The calling thread counts piece after piece: one it claimed itself it counts as it decodes
//! (each line still in cache); one the helper has, it counts once the helper hands it over,
//! decoding the next unclaimed piece in the meantime. Counting is the calling thread's alone, so
//! the helper decodes more pieces than it does, as many as its core gives: a fixed split left one
//! thread waiting for the other, the more so when the other's core was slowed by its neighbours.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::ledger::decode::{Decoded, decode};
use crate::ledger::tail::PrefixUpdate;
use crate::store::seen::LineHash;

/// Below this many lines a chunk is decoded on the calling thread: a thread costs more.
const PARALLEL_MIN_LINES: usize = 512;

/// Lines a thread claims at a time: small enough that neither waits long for the other at the
/// end of a chunk, large enough that a claim and its hand-over cost little per line.
const PIECE_LINES: usize = 96;

type Hashed<'a> = (LineHash, Decoded<'a>);

/// Hashes, decodes and counts `lines` in line order, so that what is counted, and in which
/// order, is the same as on one thread; and applies `prefix`, the file fingerprint's update over
/// them, on the helper. Stops at the first error `count` returns.
pub fn decode_and_count<'a, E>(
    lines: &[&'a [u8]],
    prefix: PrefixUpdate<'_>,
    mut count: impl FnMut(Hashed<'a>) -> Result<(), E>,
) -> Result<(), E> {
    if lines.len() < PARALLEL_MIN_LINES {
        prefix.apply();
        return lines.iter().map(decode_one).try_for_each(&mut count);
    }
    let pieces: Vec<&[&'a [u8]]> = lines.chunks(PIECE_LINES).collect();
    let hand_over = HandOver::new(pieces.len());
    std::thread::scope(|scope| {
        let helper = scope.spawn(|| {
            let _gone = Gone(&hand_over);
            prefix.apply();
            while let Some(i) = hand_over.claim() {
                hand_over.publish(i, decode_piece(pieces[i]));
            }
        });
        let counted = count_in_order(&pieces, &hand_over, &mut count);
        // The decoder does not panic on any input (it is fuzzed: fuzz/); should the helper
        // ever, the piece it held was decoded here instead (see `HandOver::wait_for`).
        let _ = helper.join();
        counted
    })
}

fn decode_one<'a>(line: &&'a [u8]) -> Hashed<'a> {
    (LineHash::of(line), decode(line))
}

fn decode_piece<'a>(piece: &[&'a [u8]]) -> Vec<Hashed<'a>> {
    piece.iter().map(decode_one).collect()
}

/// The calling thread's part: every piece counted in order, decoding what it can meanwhile.
fn count_in_order<'a, E>(
    pieces: &[&[&'a [u8]]],
    hand_over: &HandOver<'a>,
    count: &mut impl FnMut(Hashed<'a>) -> Result<(), E>,
) -> Result<(), E> {
    for (i, piece) in pieces.iter().enumerate() {
        let decoded = loop {
            if let Some(decoded) = hand_over.take(i) {
                break decoded;
            }
            match hand_over.claim() {
                // Claims go in order and every earlier piece is counted: this one is ours.
                Some(j) if j == i => break decode_piece(piece),
                // The helper has this one: decode a later one while it works.
                Some(j) => hand_over.publish(j, decode_piece(pieces[j])),
                None => match hand_over.wait_for(i) {
                    Some(decoded) => break decoded,
                    None => break decode_piece(piece),
                },
            }
        };
        decoded.into_iter().try_for_each(&mut *count)?;
    }
    Ok(())
}

/// The pieces' claims, and the decoded pieces on their way to the calling thread.
struct HandOver<'a> {
    next: AtomicUsize,
    pieces: usize,
    state: Mutex<State<'a>>,
    published: Condvar,
}

struct State<'a> {
    decoded: Vec<Option<Vec<Hashed<'a>>>>,
    /// The calling thread waits for a piece: a publication wakes it (and otherwise costs no
    /// system call).
    waiting: bool,
    /// The helper has stopped: it will publish nothing more.
    helper_gone: bool,
}

impl<'a> HandOver<'a> {
    fn new(pieces: usize) -> HandOver<'a> {
        HandOver {
            next: AtomicUsize::new(0),
            pieces,
            state: Mutex::new(State {
                decoded: (0..pieces).map(|_| None).collect(),
                waiting: false,
                helper_gone: false,
            }),
            published: Condvar::new(),
        }
    }

    /// The next piece nobody has claimed, now claimed.
    fn claim(&self) -> Option<usize> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        (i < self.pieces).then_some(i)
    }

    fn publish(&self, i: usize, decoded: Vec<Hashed<'a>>) {
        let mut state = self.lock();
        state.decoded[i] = Some(decoded);
        if state.waiting {
            self.published.notify_one();
        }
    }

    fn take(&self, i: usize) -> Option<Vec<Hashed<'a>>> {
        self.lock().decoded[i].take()
    }

    /// Piece `i`, once the helper that claimed it publishes it; `None` if the helper stopped
    /// without (it panicked).
    fn wait_for(&self, i: usize) -> Option<Vec<Hashed<'a>>> {
        let mut state = self.lock();
        loop {
            if let Some(decoded) = state.decoded[i].take() {
                return Some(decoded);
            }
            if state.helper_gone {
                return None;
            }
            state.waiting = true;
            state = self
                .published
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            state.waiting = false;
        }
    }

    /// The state, also after a panic elsewhere (nothing panics while holding it).
    fn lock(&self) -> MutexGuard<'_, State<'a>> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Tells the calling thread, when the helper ends (returning or unwinding), that nothing more
/// is coming.
struct Gone<'h, 'a>(&'h HandOver<'a>);

impl Drop for Gone<'_, '_> {
    fn drop(&mut self) {
        self.0.lock().helper_gone = true;
        self.0.published.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line counted once, in line order, whatever the split between the threads.
    #[test]
    fn lines_are_counted_in_order_once_each() {
        let text: Vec<String> = (0..5_000)
            .map(|i| format!(r#"{{"ts":"2026-08-01T00:00:00Z","model":"m/{i}","total":{i}}}"#))
            .collect();
        let lines: Vec<&[u8]> = text.iter().map(|l| l.as_bytes()).collect();
        let update = PrefixUpdate::none();
        let mut seen = Vec::new();
        let result: Result<(), ()> = decode_and_count(&lines, update, |(hash, decoded)| {
            let Decoded::Row(row) = decoded else {
                panic!("a row")
            };
            seen.push((hash, row.model.map(|m| m.into_owned())));
            Ok(())
        });
        assert_eq!(result, Ok(()));
        let want: Vec<_> = text
            .iter()
            .enumerate()
            .map(|(i, l)| (LineHash::of(l.as_bytes()), Some(format!("m/{i}"))))
            .collect();
        assert_eq!(seen, want);
    }

    /// A helper that stops holding a piece (a panic) leaves it to the calling thread, which
    /// does not wait for it forever.
    #[test]
    fn a_piece_the_helper_dropped_is_not_waited_for() {
        let hand_over = HandOver::new(2);
        assert_eq!(hand_over.claim(), Some(0), "the helper's");
        drop(Gone(&hand_over));
        assert!(hand_over.wait_for(0).is_none());
        assert_eq!(hand_over.claim(), Some(1));
        assert_eq!(hand_over.claim(), None);
    }

    #[test]
    fn the_first_error_stops_the_counting() {
        let line = br#"{"total":1}"#.as_slice();
        let lines = vec![line; 2_000];
        let update = PrefixUpdate::none();
        let mut counted = 0;
        let result = decode_and_count(&lines, update, |_| {
            counted += 1;
            if counted == 700 { Err("full") } else { Ok(()) }
        });
        assert_eq!((result, counted), (Err("full"), 700));
    }
}
