//! Times and windows as users write them: `--from 12:06:00 --for 5m`.
//!
//! A [`TimeSpec`] is parsed before the trace is opened and resolved against it afterwards
//! ([`TimeSpec::resolve`]), because a clock time or an offset means something only relative to
//! a trace. Parsing and time zones are jiff's; what is ours is the rule for which day a bare
//! clock time means:
//!
//! - `12:06:00` (or `12:06`, `12:06:00.250`): that local clock time on the date of the trace's
//!   first packet, unless it falls before the hour in which the first packet was captured, in
//!   which case it is the next day's (so in a ring that started at 23:10, `00:30` is the
//!   morning after, and `23:15` is that evening).
//! - `2026-11-22T12:06:00` or `2026-11-22 12:06:00` (local time), `2026-11-22` (midnight), or
//!   with an offset `2026-11-22T12:06:00Z`, `...+01:00`: that moment.
//! - `@1795302498.25`: seconds since the Unix epoch.
//! - `+30s`, `+5m`, `+1h30m`, `+90` (seconds), `+0.5`: that long after the first packet.
//!
//! Durations (`--for`): `30`, `2.5` (seconds), `500ms`, `5m`, `1h30m`, or ISO 8601 `PT5M`.
//!
//! Local time is the `TZ` environment variable's zone, else the system's.

use jiff::civil::{DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

/// A point in time as the user wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSpec {
    /// A local clock time; the day comes from the trace.
    Clock(Time),
    /// A local date and time.
    Civil(DateTime),
    /// An exact moment, ns since the epoch.
    At(u64),
    /// Nanoseconds after the trace's first packet.
    Offset(u64),
}

/// Why a time or duration could not be understood.
#[derive(Debug, thiserror::Error)]
#[error("{what} {input:?}: {why}")]
pub struct TimeError {
    what: &'static str,
    input: String,
    why: String,
}

fn err(what: &'static str, input: &str, why: impl std::fmt::Display) -> TimeError {
    TimeError { what, input: input.to_string(), why: why.to_string() }
}

/// Parses a duration: bare seconds (`30`, `2.5`), jiff's friendly form (`5m`, `1h30m`, `500ms`)
/// or ISO 8601 (`PT5M`). Returns nanoseconds; negative durations are refused.
pub fn parse_duration(s: &str) -> Result<u64, TimeError> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        if !secs.is_finite() || !(0.0..=1e10).contains(&secs) {
            return Err(err("duration", s, "must be a non-negative number of seconds"));
        }
        return Ok((secs * 1e9).round() as u64);
    }
    let d: SignedDuration =
        t.parse().map_err(|e| err("duration", s, format!("{e} (examples: 30, 2.5, 500ms, 5m, 1h30m)")))?;
    if d.is_negative() {
        return Err(err("duration", s, "must not be negative"));
    }
    u64::try_from(d.as_nanos()).map_err(|_| err("duration", s, "too long"))
}

impl std::str::FromStr for TimeSpec {
    type Err = TimeError;

    fn from_str(s: &str) -> Result<TimeSpec, TimeError> {
        let t = s.trim();
        if let Some(rest) = t.strip_prefix('+') {
            return parse_duration(rest).map(TimeSpec::Offset).map_err(|e| err("time offset", s, e.why));
        }
        if let Some(rest) = t.strip_prefix('@') {
            return epoch_ns(rest)
                .map(TimeSpec::At)
                .ok_or_else(|| err("time", s, "expected seconds since the epoch after @ (e.g. @1795302498.25)"));
        }
        if let Ok(ts) = t.parse::<Timestamp>() {
            return u64::try_from(ts.as_nanosecond()).map(TimeSpec::At).map_err(|_| err("time", s, "before 1970"));
        }
        if let Ok(dt) = t.parse::<DateTime>() {
            return Ok(TimeSpec::Civil(dt));
        }
        if let Ok(d) = t.parse::<jiff::civil::Date>() {
            return Ok(TimeSpec::Civil(d.to_datetime(Time::midnight())));
        }
        if let Ok(tm) = t.parse::<Time>() {
            return Ok(TimeSpec::Clock(tm));
        }
        Err(err(
            "time",
            s,
            "expected a clock time (12:06:00), a date and time (2026-11-22T12:06:00, optionally with Z or an offset), @EPOCH_SECONDS, or an offset from the trace start (+30s)",
        ))
    }
}

/// `SECONDS[.FRACTION]` to ns, exactly (a float would lose the last digits of a 2026 time).
fn epoch_ns(s: &str) -> Option<u64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > 9
    {
        return None;
    }
    let secs: u64 = int.parse().ok()?;
    let frac_ns: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<9}").parse().ok()? };
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

impl TimeSpec {
    /// The moment this spec means for a trace whose first packet is at `start_ns`, in zone `tz`.
    pub fn resolve(&self, start_ns: u64, tz: &TimeZone) -> Result<u64, TimeError> {
        let to_ns = |ts: Timestamp| {
            u64::try_from(ts.as_nanosecond()).map_err(|_| err("time", &format!("{self:?}"), "before 1970"))
        };
        match *self {
            TimeSpec::At(ns) => Ok(ns),
            TimeSpec::Offset(ns) => Ok(start_ns.saturating_add(ns)),
            TimeSpec::Civil(dt) => {
                let z = dt.to_zoned(tz.clone()).map_err(|e| err("time", &dt.to_string(), e))?;
                to_ns(z.timestamp())
            }
            TimeSpec::Clock(tm) => {
                let start =
                    Timestamp::from_nanosecond(start_ns as i128).map_err(|e| err("time", &tm.to_string(), e))?;
                let local = start.to_zoned(tz.clone());
                let hour_start = local
                    .datetime()
                    .with()
                    .minute(0)
                    .second(0)
                    .subsec_nanosecond(0)
                    .build()
                    .map_err(|e| err("time", &tm.to_string(), e))?;
                let mut day = local.date();
                if day.to_datetime(tm) < hour_start {
                    day = day.tomorrow().map_err(|e| err("time", &tm.to_string(), e))?;
                }
                let z = day.to_datetime(tm).to_zoned(tz.clone()).map_err(|e| err("time", &tm.to_string(), e))?;
                to_ns(z.timestamp())
            }
        }
    }
}

/// A time window `[from, to)` as the user gave it: `--from`, and `--for` or `--to`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// Start (default: the trace's first packet).
    pub from: Option<TimeSpec>,
    /// Length in ns (`--for`).
    pub length_ns: Option<u64>,
    /// End (`--to`); with `--for` as well, the earlier of the two ends counts.
    pub to: Option<TimeSpec>,
}

impl Window {
    /// Whether any limit was given.
    pub fn is_set(&self) -> bool {
        self.from.is_some() || self.length_ns.is_some() || self.to.is_some()
    }

    /// `[from_ns, to_ns)` for a trace starting at `start_ns` (`u64::MAX` as the end when
    /// unbounded), in local time of `tz`.
    pub fn resolve(&self, start_ns: u64, tz: &TimeZone) -> Result<(u64, u64), TimeError> {
        let from = match &self.from {
            Some(f) => f.resolve(start_ns, tz)?,
            None => 0,
        };
        let mut to = u64::MAX;
        if let Some(len) = self.length_ns {
            to = from.max(start_ns).saturating_add(len);
            if self.from.is_some() {
                to = from.saturating_add(len);
            }
        }
        if let Some(t) = &self.to {
            to = to.min(t.resolve(start_ns, tz)?);
        }
        Ok((from, to))
    }
}

/// `HH:MM:SS.ffffff` in `tz`, as `print` shows times (thesis figure 2.2, with µs).
pub fn clock(ts_ns: u64, tz: &TimeZone) -> String {
    let sec = (ts_ns / 1_000_000_000) as i64;
    let Some(hms) = second_text(sec, tz, "%H:%M:%S") else { return ts_ns.to_string() };
    let mut s = String::with_capacity(hms.len() + 7);
    s.push_str(&hms);
    push_micros(&mut s, (ts_ns % 1_000_000_000 / 1000) as u32);
    s
}

/// Whole second `sec` (since the epoch) in `tz` as `format` (strftime) gives it, remembered
/// per thread and format (two formats: `stats` alternates a date and a clock time) for the last
/// [`SECONDS_KEPT`] seconds met: zoning and formatting with jiff cost ~1,600 instructions, paid
/// once a second instead of once a packet (`print`) or a connection (`stats`, where each
/// connection's first and last times are seconds apart). `None` out of jiff's range.
pub fn second_text(sec: i64, tz: &TimeZone, format: &'static str) -> Option<std::rc::Rc<str>> {
    type Kept = Option<(i64, TimeZone, std::rc::Rc<str>)>;
    type Last = [Option<(&'static str, Box<[Kept; SECONDS_KEPT]>)>; 2];
    thread_local! {
        static LAST: std::cell::RefCell<Last> = const { std::cell::RefCell::new([None, None]) };
    }
    LAST.with_borrow_mut(|last| {
        // The slot of this format, else an empty one, else the first.
        let k = (0..2)
            .find(|&k| last[k].as_ref().is_some_and(|l| l.0 == format))
            .or_else(|| (0..2).find(|&k| last[k].is_none()))
            .unwrap_or(0);
        let kept = match &mut last[k] {
            Some((f, kept)) if *f == format => kept,
            slot => &mut slot.insert((format, Box::new([const { None }; SECONDS_KEPT]))).1,
        };
        let at = &mut kept[sec.rem_euclid(SECONDS_KEPT as i64) as usize];
        if let Some((s, z, text)) = at.as_ref()
            && *s == sec
            && z == tz
        {
            return Some(text.clone());
        }
        let ts = Timestamp::from_second(sec).ok()?;
        let text: std::rc::Rc<str> = ts.to_zoned(tz.clone()).strftime(format).to_string().into();
        *at = Some((sec, tz.clone(), text.clone()));
        Some(text)
    })
}

/// Seconds [`second_text`] remembers per format, each at `sec % SECONDS_KEPT`: a minute and
/// more, so that the connections of a busy minute find both their first and last seconds.
const SECONDS_KEPT: usize = 128;

/// Appends `.ffffff`: `us` (below 1,000,000) with six digits.
pub fn push_micros(s: &mut String, us: u32) {
    let mut digits = [b'0'; 7];
    digits[0] = b'.';
    let mut v = us;
    for d in digits[1..].iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
    s.push_str(std::str::from_utf8(&digits).expect("ASCII digits"));
}

/// The zone for local times: `TZ` if set and valid, else the system's, else UTC.
pub fn local_zone() -> TimeZone {
    TimeZone::try_system().unwrap_or(TimeZone::UTC)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn utc(s: &str) -> u64 {
        s.parse::<Timestamp>().unwrap().as_nanosecond() as u64
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30").unwrap(), 30 * S);
        assert_eq!(parse_duration("2.5").unwrap(), 2_500_000_000);
        assert_eq!(parse_duration("5m").unwrap(), 300 * S);
        assert_eq!(parse_duration("1h30m").unwrap(), 5400 * S);
        assert_eq!(parse_duration("500ms").unwrap(), 500_000_000);
        assert_eq!(parse_duration("PT5M").unwrap(), 300 * S);
        assert!(parse_duration("-5").is_err());
        assert!(parse_duration("five").is_err());
    }

    #[test]
    fn clock_times_take_the_traces_day() {
        let tz = TimeZone::UTC;
        let start = utc("2026-11-22T12:06:17.3Z");
        let at = |s: &str| s.parse::<TimeSpec>().unwrap().resolve(start, &tz).unwrap();
        assert_eq!(at("12:06:00"), utc("2026-11-22T12:06:00Z"));
        assert_eq!(at("12:00"), utc("2026-11-22T12:00:00Z"));
        assert_eq!(at("13:30:00.5"), utc("2026-11-22T13:30:00.5Z"));
        // Before the first packet's hour: the next day (a ring that crossed midnight).
        assert_eq!(at("00:30"), utc("2026-11-23T00:30:00Z"));
        assert_eq!(at("11:59:59"), utc("2026-11-23T11:59:59Z"));
        // In another zone the same clock time is another moment.
        let paris = TimeZone::get("Europe/Paris").unwrap_or(TimeZone::fixed(jiff::tz::offset(1)));
        let p = "13:06:00".parse::<TimeSpec>().unwrap().resolve(start, &paris).unwrap();
        assert_eq!(p, utc("2026-11-22T12:06:00Z"));
    }

    #[test]
    fn dates_offsets_and_epochs() {
        let tz = TimeZone::UTC;
        let start = utc("2026-11-22T12:06:17Z");
        let at = |s: &str| s.parse::<TimeSpec>().unwrap().resolve(start, &tz).unwrap();
        assert_eq!(at("2026-11-22T12:07:00"), utc("2026-11-22T12:07:00Z"));
        assert_eq!(at("2026-11-22 12:07:00"), utc("2026-11-22T12:07:00Z"));
        assert_eq!(at("2026-11-22T13:07:00+01:00"), utc("2026-11-22T12:07:00Z"));
        assert_eq!(at("2026-11-23"), utc("2026-11-23T00:00:00Z"));
        assert_eq!(at("+30s"), start + 30 * S);
        assert_eq!(at("+1.5"), start + 1_500_000_000);
        assert_eq!(at("@1795302498.25"), 1_795_302_498_250_000_000);
        assert!("tomorrow".parse::<TimeSpec>().is_err());
        assert!("+soon".parse::<TimeSpec>().is_err());
    }

    #[test]
    fn windows() {
        let tz = TimeZone::UTC;
        let start = utc("2026-11-22T12:06:17Z");
        let w = Window { from: Some("12:06:20".parse().unwrap()), length_ns: Some(5 * S), to: None };
        assert_eq!(w.resolve(start, &tz).unwrap(), (utc("2026-11-22T12:06:20Z"), utc("2026-11-22T12:06:25Z")));
        let w = Window { from: None, length_ns: Some(5 * S), to: None };
        assert_eq!(w.resolve(start, &tz).unwrap(), (0, start + 5 * S));
        let w =
            Window { from: Some("+1s".parse().unwrap()), length_ns: Some(10 * S), to: Some("+3s".parse().unwrap()) };
        assert_eq!(w.resolve(start, &tz).unwrap(), (start + S, start + 3 * S));
        assert_eq!(clock(utc("2026-11-22T12:06:17.324567891Z"), &tz), "12:06:17.324567");
    }

    /// What is remembered is what jiff gives, through seconds that share a place (`sec` and
    /// `sec + SECONDS_KEPT`), formats that take turns, and zones.
    #[test]
    fn remembered_seconds_are_jiffs() {
        let paris = TimeZone::get("Europe/Paris").unwrap_or(TimeZone::fixed(jiff::tz::offset(1)));
        let base = 1_795_302_000i64;
        for round in 0..3 {
            for (i, sec) in [base, base + 1, base + SECONDS_KEPT as i64, base - 1, base].into_iter().enumerate() {
                for tz in [&TimeZone::UTC, &paris] {
                    for format in ["%H:%M:%S", "%Y-%m-%d %H:%M:%S %Z", "%H:%M"] {
                        let jiff =
                            Timestamp::from_second(sec).unwrap().to_zoned(tz.clone()).strftime(format).to_string();
                        assert_eq!(&*second_text(sec, tz, format).unwrap(), jiff, "round {round}, second {i}");
                    }
                }
            }
        }
        assert!(second_text(i64::MAX, &TimeZone::UTC, "%H:%M:%S").is_none());
    }
}
