//! Go-style durations (`1m0s`, `500ms`, `1h30m`), the format kubectl flags and Flux YAML use,
//! and days (`30d`): every duration flag of every command takes both (docs/cli.md), and what is
//! written into Flux YAML is Go's form ([`format`]).

use std::time::Duration;

/// Parses `5s`, `1m30s`, `1h`, `250ms`, or a bare number of seconds (`30`), as kubectl does, and
/// days (`30d`, `1d12h`), as `metrics dora --since` always took them.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration".into());
    }
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!("invalid duration {text:?}: expected a number before {rest:?}"));
        }
        let number: f64 = rest[..digits]
            .parse()
            .map_err(|_| format!("invalid duration {text:?}: bad number {:?}", &rest[..digits]))?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            "" => {
                return Err(format!("invalid duration {text:?}: missing unit (use s, m, h or d)"));
            }
            unit => {
                return Err(format!("invalid duration {text:?}: unknown unit {unit:?} (use ms, s, m, h or d)"));
            }
        };
        total += Duration::from_secs_f64(number * seconds_per_unit);
        rest = &rest[unit_len..];
    }
    Ok(total)
}

/// Formats whole-second durations the way Go's `time.Duration.String()` does: `1m0s`, `1h0m0s`, `30s`.
pub fn format(duration: Duration) -> String {
    let millis = duration.subsec_millis();
    let total = duration.as_secs();
    if total == 0 && millis > 0 {
        return format!("{millis}ms");
    }
    let (hours, minutes, seconds) = (total / 3600, (total % 3600) / 60, total % 60);
    let seconds = if millis > 0 {
        format!("{seconds}.{}", format!("{millis:03}").trim_end_matches('0'))
    } else {
        seconds.to_string()
    };
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, _) => format!("{minutes}m{seconds}s"),
        _ => format!("{hours}h{minutes}m{seconds}s"),
    }
}

/// A duration as Prometheus writes one (`10m`, `1d`, `90s`): its largest whole unit.
pub fn format_prometheus(value: Duration) -> String {
    let seconds = value.as_secs();
    let millis = value.as_millis();
    if !millis.is_multiple_of(1000) || seconds == 0 {
        return format!("{millis}ms");
    }
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60)] {
        if seconds.is_multiple_of(size) {
            return format!("{}{unit}", seconds / size);
        }
    }
    format!("{seconds}s")
}

/// Formats an age the way kubectl's AGE column does: `45s`, `12m`, `3h4m`, `2d5h`, `400d`.
pub fn format_age(age: Duration) -> String {
    let seconds = age.as_secs();
    match seconds {
        0..120 => format!("{seconds}s"),
        120..600 => format!("{}m{}s", seconds / 60, seconds % 60),
        600..10_800 => format!("{}m", seconds / 60),
        10_800..28_800 => format!("{}h{}m", seconds / 3600, (seconds % 3600) / 60),
        28_800..172_800 => format!("{}h", seconds / 3600),
        172_800..2_592_000 => format!("{}d{}h", seconds / 86_400, (seconds % 86_400) / 3600),
        _ => format!("{}d", seconds / 86_400),
    }
}

/// Seconds since the Unix epoch, now.
pub fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_secs())
}

/// Parses an RFC 3339 UTC timestamp as Kubernetes writes them (`2026-12-02T11:00:00Z`, optionally
/// with a fraction) into seconds since the Unix epoch.
pub fn parse_timestamp(time: &str) -> Option<u64> {
    let time = time.strip_suffix('Z')?;
    let (date, clock) = time.split_once('T')?;
    let mut date_parts = date.split('-').map(|part| part.parse::<i64>().ok());
    let (year, month, day) = (date_parts.next()??, date_parts.next()??, date_parts.next()??);
    let mut clock_parts = clock.split('.').next()?.split(':').map(|part| part.parse::<i64>().ok());
    let (hour, minute, second) = (clock_parts.next()??, clock_parts.next()??, clock_parts.next()??);
    // Days since 1970-01-01 from the civil date (Howard Hinnant's days_from_civil).
    let shifted_year = if month <= 2 { year - 1 } else { year };
    let era = shifted_year.div_euclid(400);
    let year_of_era = shifted_year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    u64::try_from(days * 86_400 + hour * 3600 + minute * 60 + second).ok()
}

/// Formats seconds since the Unix epoch as an RFC 3339 UTC timestamp, `2026-12-02T11:00:00Z`, the
/// form Kubernetes writes (the inverse of [`parse_timestamp`]).
pub fn format_timestamp(seconds: i64) -> String {
    let (days, second_of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    // The civil date from days since 1970-01-01 (Howard Hinnant's civil_from_days).
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    let (hour, minute, second) = (second_of_day / 3600, second_of_day % 3600 / 60, second_of_day % 60);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

/// A duration in serde as a Go duration string (`1m`, `90s`), as the flags and Flux write it:
/// `#[serde(with = "crate::duration::go")]`.
pub mod go {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes `duration` as `format` does.
    pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&super::format(*duration))
    }

    /// Reads a duration as `parse` does.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(deserializer)?;
        super::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kubectl_and_go_forms() {
        assert_eq!(parse("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1h0m0s"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse("1d12h"), Ok(Duration::from_secs(36 * 3_600)));
        assert_eq!(format(parse("1d").unwrap()), "24h0m0s", "Flux YAML gets Go's form");
    }

    #[test]
    fn rejects_nonsense_with_the_reason() {
        assert!(parse("").is_err());
        assert!(parse("5x").unwrap_err().contains("unknown unit"));
        assert!(parse("m").unwrap_err().contains("expected a number"));
        assert!(parse("5s3").unwrap_err().contains("missing unit"));
    }

    #[test]
    fn durations_are_written_as_prometheus_reads_them() {
        assert_eq!(format_prometheus(Duration::from_secs(600)), "10m");
        assert_eq!(format_prometheus(Duration::from_secs(86_400)), "1d");
        assert_eq!(format_prometheus(Duration::from_secs(90)), "90s");
        assert_eq!(format_prometheus(Duration::from_secs(7200)), "2h");
        assert_eq!(format_prometheus(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn formats_like_go() {
        assert_eq!(format(Duration::from_secs(60)), "1m0s");
        assert_eq!(format(Duration::from_secs(600)), "10m0s");
        assert_eq!(format(Duration::from_secs(30)), "30s");
        assert_eq!(format(Duration::from_secs(3600)), "1h0m0s");
        assert_eq!(format(Duration::from_secs(5400)), "1h30m0s");
        assert_eq!(format(Duration::from_millis(500)), "500ms");
        assert_eq!(format(Duration::from_millis(1500)), "1.5s");
    }

    #[test]
    fn timestamps_parse_to_epoch_seconds() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_timestamp("2026-12-02T11:13:51Z"), Some(1_796_210_031));
        assert_eq!(parse_timestamp("2024-02-29T12:00:00.123Z"), Some(1_709_208_000));
        assert_eq!(parse_timestamp("yesterday"), None);
        for time in ["1970-01-01T00:00:00Z", "2026-12-02T11:13:51Z", "2024-02-29T12:00:00Z", "2000-03-01T23:59:59Z"] {
            let seconds = parse_timestamp(time).unwrap();
            assert_eq!(format_timestamp(i64::try_from(seconds).unwrap()), time);
        }
    }

    #[test]
    fn ages_look_like_kubectl() {
        assert_eq!(format_age(Duration::from_secs(45)), "45s");
        assert_eq!(format_age(Duration::from_secs(150)), "2m30s");
        assert_eq!(format_age(Duration::from_secs(1200)), "20m");
        assert_eq!(format_age(Duration::from_secs(4 * 3600 + 60)), "4h1m");
        assert_eq!(format_age(Duration::from_secs(10 * 3600)), "10h");
        assert_eq!(format_age(Duration::from_secs(3 * 86_400 + 7200)), "3d2h");
        assert_eq!(format_age(Duration::from_secs(400 * 86_400)), "400d");
    }
}
