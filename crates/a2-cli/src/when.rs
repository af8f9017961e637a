//! Times for people: every moment a table prints says how far it is from now
//! and when it is, in UTC (`in 23 h 59 min (2026-12-07 03:50:12 UTC)`);
//! spans say their two largest units (`3 min 5 s`). `--json` keeps the
//! numbers, so nothing here is parsed back.

/// Milliseconds since the epoch, by this machine's clock.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A span in its two largest units: `450 ms`, `12 s`, `3 min 5 s`,
/// `23 h 59 min`, `2 d 4 h` (a zero second unit is left out: `2 h`).
pub fn duration(ms: i64) -> String {
    let ms = ms.unsigned_abs();
    if ms < 1_000 {
        return format!("{ms} ms");
    }
    const UNITS: [(u64, &str); 4] = [(86_400, "d"), (3_600, "h"), (60, "min"), (1, "s")];
    let seconds = ms / 1_000;
    let Some(first) = UNITS.iter().position(|(size, _)| seconds >= *size) else {
        return format!("{seconds} s");
    };
    let (size, name) = UNITS[first];
    let whole = seconds / size;
    let rest = seconds % size;
    match UNITS.get(first + 1) {
        Some((next, next_name)) if rest / next > 0 => format!("{whole} {name} {} {next_name}", rest / next),
        _ => format!("{whole} {name}"),
    }
}

/// How far `at` is from `now`: `in 4 s`, `3 min ago`, or `now` within a second.
pub fn relative(at: i64, now: i64) -> String {
    let delta = at.saturating_sub(now);
    if delta.unsigned_abs() < 1_000 {
        "now".to_owned()
    } else if delta > 0 {
        format!("in {}", duration(delta))
    } else {
        format!("{} ago", duration(delta))
    }
}

/// Epoch milliseconds as a UTC date-time: `2026-12-07 03:50:12 UTC`.
pub fn absolute(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map_or_else(|| format!("{ms} ms after the epoch"), |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
}

/// Both: `3 min ago (2026-12-07 03:47:12 UTC)`.
pub fn moment(at: i64, now: i64) -> String {
    format!("{} ({})", relative(at, now), absolute(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-07 03:50:12 UTC.
    const NOW: i64 = 1_796_615_412_000;

    #[test]
    fn spans_say_their_two_largest_units() {
        assert_eq!(duration(0), "0 ms");
        assert_eq!(duration(450), "450 ms");
        assert_eq!(duration(999), "999 ms");
        assert_eq!(duration(1_000), "1 s");
        assert_eq!(duration(12_345), "12 s");
        assert_eq!(duration(59_999), "59 s");
        assert_eq!(duration(60_000), "1 min");
        assert_eq!(duration(185_000), "3 min 5 s");
        assert_eq!(duration(7_200_000), "2 h", "a zero second unit is left out");
        assert_eq!(duration(86_398_000), "23 h 59 min", "never `86398 s`");
        assert_eq!(duration(86_400_000), "1 d");
        assert_eq!(duration(187_200_000), "2 d 4 h");
        assert_eq!(duration(-185_000), "3 min 5 s", "a span has no sign");
        assert_eq!(duration(i64::MIN), "106751991167 d 7 h");
    }

    #[test]
    fn moments_say_how_far_from_now_and_when() {
        assert_eq!(relative(NOW, NOW), "now");
        assert_eq!(relative(NOW + 999, NOW), "now");
        assert_eq!(relative(NOW - 999, NOW), "now");
        assert_eq!(relative(NOW + 4_000, NOW), "in 4 s");
        assert_eq!(relative(NOW - 180_000, NOW), "3 min ago");
        assert_eq!(relative(NOW + 86_398_000, NOW), "in 23 h 59 min");
        assert_eq!(relative(NOW - 3 * 86_400_000, NOW), "3 d ago");
        assert_eq!(relative(i64::MIN, NOW), "106751991167 d 7 h ago", "no overflow at the far past");
        assert_eq!(absolute(NOW), "2026-12-07 03:50:12 UTC");
        assert_eq!(absolute(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(absolute(i64::MAX), format!("{} ms after the epoch", i64::MAX), "past chrono's range");
        assert_eq!(moment(NOW - 180_000, NOW), "3 min ago (2026-12-07 03:47:12 UTC)");
        assert_eq!(moment(NOW + 86_398_000, NOW), "in 23 h 59 min (2026-12-08 03:50:10 UTC)");
    }
}
