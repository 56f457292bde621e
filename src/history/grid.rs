//! Where the points of history go.
//!
//! A point at grid time `P` carries every line before `P`. The grid's step divides fifteen
//! minutes, so that every local midnight of every time zone (their offsets are whole quarter
//! hours) is a grid time: a day's growth, read across its midnights, is the day's lines exactly.
//! Points are only where a series grew, plus its zero one step before its first growth, and a
//! point every twelve hours between (a range query of a day finds a value in every window); all
//! of them before the stream's first point, where the live stream takes over.

use crate::series::Counter;

/// Fifteen minutes, in ms: every zone's midnight is a multiple of it.
const QUARTER_HOUR_MS: i64 = 900_000;
const DAY_MS: i64 = 86_400_000;
/// The earliest time a line is placed at: 2000-01-01T00:00:00Z. Before it a `ts` is no time a
/// line was written at, and a series held twice a day from there would be millions of points.
pub const EARLIEST_MS: i64 = 946_684_800_000;
/// Between two points of a series, at most this: twice a day.
const HEARTBEAT_MS: i64 = 12 * 3_600_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    step_ms: i64,
    /// The last moment of history: a millisecond before the stream's first point.
    last_ms: i64,
}

impl Grid {
    /// One point per `interval_ms` (the export interval) where it divides fifteen minutes, else
    /// per the largest whole second below it that does; history ends before `first_sent_ns`.
    pub fn new(interval_ms: u64, first_sent_ns: u64) -> Grid {
        let want_s = (interval_ms / 1000).clamp(1, QUARTER_HOUR_MS as u64 / 1000) as i64;
        let step_s = (1..=want_s)
            .rev()
            .find(|s| QUARTER_HOUR_MS / 1000 % s == 0)
            .unwrap_or(1);
        Grid {
            step_ms: step_s * 1000,
            last_ms: (first_sent_ns / 1_000_000) as i64 - 1,
        }
    }

    pub fn step_ms(&self) -> i64 {
        self.step_ms
    }

    /// The block a point is written in: its UTC day. History is read and written a block at a
    /// time, in time order, so that only the days being read are held.
    pub fn block_of(point: i64) -> i64 {
        point.div_euclid(DAY_MS)
    }

    /// The point that carries a line written at `at_ms`: the grid time after it, or the last
    /// moment of history for a line of the stream's first step, one dated after it (a clock
    /// that ran fast), one without a time, or one dated before [`EARLIEST_MS`] (Go writes an
    /// unset time as year 1: no time Reasonix wrote a line at).
    pub fn point_of(&self, at_ms: Option<i64>) -> i64 {
        match at_ms.filter(|at| *at >= EARLIEST_MS) {
            Some(at) => (at.div_euclid(self.step_ms) + 1)
                .saturating_mul(self.step_ms)
                .min(self.last_ms),
            None => self.last_ms,
        }
    }

    /// Appends to `out` the points of one series' growth `(point, delta)` (in any order, a
    /// point any number of times), after those `running` says were made before (all of them at
    /// earlier times): cumulative, never above `cap` (what the stream first sent), a zero one step
    /// before the first, heartbeats between.
    pub fn extend<V: Counter>(
        &self,
        running: &mut Running<V>,
        growth: &mut [(i64, V)],
        cap: V,
        out: &mut Vec<(i64, V)>,
    ) {
        growth.sort_by_key(|(at, _)| *at);
        let capped = |v: V| v.less(v.less(cap));
        let mut i = 0;
        while i < growth.len() {
            let at = growth[i].0;
            while i < growth.len() && growth[i].0 == at {
                running.total = running.total.plus(growth[i].1);
                i += 1;
            }
            let last = running.last.unwrap_or((at - self.step_ms, V::default()));
            if running.last.is_none() {
                out.push(last);
            }
            self.heartbeats(last, at, out);
            running.last = Some((at, capped(running.total)));
            out.push((at, capped(running.total)));
        }
    }

    /// Appends to `out` a series' heartbeats after its last point, to the end of history.
    pub fn close<V: Counter>(&self, running: &Running<V>, out: &mut Vec<(i64, V)>) {
        if let Some(last) = running.last {
            self.heartbeats(last, self.last_ms + 1, out);
        }
    }

    /// The points of one series from its whole growth: [`Grid::extend`] then [`Grid::close`].
    pub fn points<V: Counter>(&self, growth: &mut [(i64, V)], cap: V) -> Vec<(i64, V)> {
        let (mut running, mut out) = (Running::default(), Vec::new());
        self.extend(&mut running, growth, cap, &mut out);
        self.close(&running, &mut out);
        out
    }

    /// Points every [`HEARTBEAT_MS`] after `(at, value)`, holding its value, while they fall
    /// before `until`.
    fn heartbeats<V: Counter>(&self, (mut at, value): (i64, V), until: i64, out: &mut Vec<(i64, V)>) {
        while until - at > HEARTBEAT_MS {
            at += HEARTBEAT_MS;
            out.push((at, value));
        }
    }
}

/// Where a series' points have come to: its newest point, and its sum so far (uncapped).
#[derive(Debug, Clone, Copy, Default)]
pub struct Running<V> {
    last: Option<(i64, V)>,
    total: V,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_divides_a_quarter_hour() {
        let t0 = 100 * DAY_MS as u64 * 1_000_000;
        assert_eq!(Grid::new(15_000, t0).step_ms(), 15_000);
        assert_eq!(Grid::new(60_000, t0).step_ms(), 60_000);
        assert_eq!(Grid::new(7_000, t0).step_ms(), 6_000);
        assert_eq!(Grid::new(500, t0).step_ms(), 1_000);
        assert_eq!(Grid::new(3_600_000, t0).step_ms(), 900_000);
    }

    #[test]
    fn a_line_is_carried_by_the_grid_time_after_it() {
        // History from the earliest time a line is placed at (a whole day, a whole step).
        let t0 = EARLIEST_MS;
        let last = t0 + 10 * DAY_MS - 1;
        let grid = Grid::new(15_000, (last + 1) as u64 * 1_000_000);
        assert_eq!(grid.point_of(Some(t0)), t0 + 15_000);
        assert_eq!(grid.point_of(Some(t0 + 14_999)), t0 + 15_000);
        assert_eq!(grid.point_of(Some(t0 + 15_000)), t0 + 30_000);
        assert_eq!(grid.point_of(Some(last - 2)), last, "the stream's first step");
        assert_eq!(
            grid.point_of(Some(t0 + 20 * DAY_MS)),
            last,
            "after the first send"
        );
        assert_eq!(grid.point_of(None), last);
        assert_eq!(grid.point_of(Some(t0 - 1)), last, "before the earliest");
        let year_1 = crate::ledger::timestamp::unix_ms_of_rfc3339("0001-01-01T00:00:00Z");
        assert!(year_1.is_some());
        assert_eq!(grid.point_of(year_1), last, "Go's unset time is no time");
    }

    #[test]
    fn points_start_at_zero_add_up_hold_twice_a_day_and_never_pass_the_cap() {
        let grid = Grid::new(60_000, 3 * DAY_MS as u64 * 1_000_000);
        let mut growth = vec![(DAY_MS + 60_000, 5u64), (60_000, 2), (DAY_MS + 60_000, 1)];
        let points = grid.points(&mut growth, 7);
        let half = DAY_MS / 2;
        assert_eq!(
            points,
            [
                (0, 0),
                (60_000, 2),
                (60_000 + half, 2),
                (DAY_MS + 60_000, 7),
                (DAY_MS + 60_000 + half, 7),
                (DAY_MS + 60_000 + 2 * half, 7),
                (DAY_MS + 60_000 + 3 * half, 7),
            ]
        );
        assert!(points.last().unwrap().0 < 3 * DAY_MS);
        let capped = grid.points(&mut [(60_000, 9u64)], 4);
        assert_eq!(capped[1], (60_000, 4));
        assert!(grid.points::<u64>(&mut [], 4).is_empty());
    }

    #[test]
    fn a_series_made_a_block_at_a_time_is_the_series_made_whole() {
        let grid = Grid::new(15_000, 9 * DAY_MS as u64 * 1_000_000);
        let growth = [
            (15_000, 1u64),
            (DAY_MS - 15_000, 2),
            (DAY_MS, 4),
            (5 * DAY_MS + 15_000, 8),
        ];
        let whole = grid.points(&mut growth.clone(), 12);
        let (mut running, mut blocks) = (Running::default(), Vec::new());
        for day in 0..9 {
            let mut block: Vec<_> = growth
                .iter()
                .filter(|(at, _)| Grid::block_of(*at) == day)
                .copied()
                .collect();
            grid.extend(&mut running, &mut block, 12, &mut blocks);
        }
        grid.close(&running, &mut blocks);
        assert_eq!(blocks, whole);
        assert_eq!(whole[whole.len() - 1].1, 12, "capped");
    }
}
