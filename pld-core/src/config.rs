//! Settings of a world: the builder, and every `PLD_*` variable, parsed here and nowhere else.
//! A setting is validated once, when the world starts; a value that cannot be meant is an
//! error naming the variable, the value and the form it accepts, never a silent default.

use std::path::PathBuf;
use std::time::Duration;

use pld_model::{LL_MAX_BYTES, LlLayout};

use crate::error::{Error, Result};

/// Default deadline of every wait, overridable with `PLD_TIMEOUT_MS`.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;
/// Default symmetric heap size per rank (reserved, not committed), overridable with
/// `PLD_WINDOW_BYTES`.
pub const DEFAULT_WINDOW_BYTES: usize = 1 << 30;
/// Default size from which a mesh all_reduce runs two-shot instead of one-shot at 3 ranks or
/// more, overridable with `PLD_TWO_SHOT_BYTES`. Measured with pld-bench on 2 cores (see
/// docs/PERFORMANCE.md): at 4 and 8 ranks two-shot wins from 8 KiB, the first size above the LL
/// messages; at 2 ranks from 4 KiB, so 2 ranks use [`DEFAULT_TWO_SHOT_BYTES_2_RANKS`].
pub const DEFAULT_TWO_SHOT_BYTES: usize = 8 << 10;
/// The two-shot threshold of a 2-rank world.
pub const DEFAULT_TWO_SHOT_BYTES_2_RANKS: usize = 4 << 10;
/// Default largest payload per rank that travels as LL messages (data and flag together, no
/// round trips; see `pld_device.h`), overridable with `PLD_LL_BYTES` (0: never).
pub const DEFAULT_LL_BYTES: usize = 4 << 10;
/// Default rank count of [`World::from_env`](crate::World::from_env) outside an MPI job.
pub const DEFAULT_NRANKS: usize = 4;
/// Default number of calls each rank's flight recorder keeps, overridable with
/// `PLD_FLIGHT_RECORDER` (0: none).
pub const DEFAULT_FLIGHT_RECORDER: usize = 64;
/// Default number of calls a trace keeps per rank (the last ones), overridable with
/// `PLD_TRACE_EVENTS`: 8 MiB of events per rank, mapped when the world starts, and some 60 MB
/// of trace file. A longer run reuses the memory of its oldest events instead of growing
/// without bound (a rank making 10 000 calls a second would otherwise hold a gigabyte after an
/// hour).
pub const DEFAULT_TRACE_EVENTS: usize = 1 << 18;

const SIZE_FORM: &str =
    "a byte count, optionally with K/M/G/T or KiB/MiB/GiB/TiB (powers of 1024), e.g. 4096, 64K, 1GiB";
const TIME_FORM: &str = "a positive time in ms (the default unit) or s, e.g. 1500, 250ms, 2s";
const FLAG_FORM: &str = "0 or 1 (also false/true, off/on, no/yes)";
const COUNT_FORM: &str = "a positive whole number";
const CALLS_FORM: &str = "a whole number of calls (0: none), at most 1048576";

/// The most calls a flight recorder keeps (its ring and times take 40 bytes a call, per rank).
pub const MAX_FLIGHT_RECORDER: usize = 1 << 20;

/// Configures a [`World`](crate::World) before starting it; every setting left unset is read
/// from its `PLD_*` variable, else takes its default.
#[derive(Clone, Debug)]
pub struct WorldBuilder {
    pub(crate) nranks: usize,
    timeout: Option<Duration>,
    window_bytes: Option<usize>,
    two_shot_bytes: Option<usize>,
    ll_bytes: Option<usize>,
    inline: Option<bool>,
    check_calls: bool,
    flight_recorder: Option<usize>,
    trace: Option<PathBuf>,
    trace_events: Option<usize>,
    trace_on_error: Option<PathBuf>,
}

impl WorldBuilder {
    /// A world of `nranks` ranks.
    pub fn new(nranks: usize) -> WorldBuilder {
        WorldBuilder {
            nranks,
            timeout: None,
            window_bytes: None,
            two_shot_bytes: None,
            ll_bytes: None,
            inline: None,
            check_calls: true,
            flight_recorder: None,
            trace: None,
            trace_events: None,
            trace_on_error: None,
        }
    }

    /// Whether collectives compare their fingerprints across ranks before moving data (default
    /// on). Off only to measure what the check costs (`pld-bench --baseline unchecked`): a
    /// world without it cannot tell mismatched calls from matching ones.
    pub fn check_calls(mut self, check: bool) -> WorldBuilder {
        self.check_calls = check;
        self
    }

    /// The deadline of every wait for a peer (default `PLD_TIMEOUT_MS`, else 60 s): each wait
    /// has its own, however many a call makes.
    pub fn timeout(mut self, timeout: Duration) -> WorldBuilder {
        self.timeout = Some(timeout);
        self
    }

    /// Size of each rank's symmetric heap (default `PLD_WINDOW_BYTES`, else 1 GiB reserved).
    pub fn window_bytes(mut self, bytes: usize) -> WorldBuilder {
        self.window_bytes = Some(bytes);
        self
    }

    /// Size from which a mesh all_reduce runs two-shot (default `PLD_TWO_SHOT_BYTES`, else
    /// 4 KiB at 2 ranks and 8 KiB above); 0 makes every mesh all_reduce two-shot, `usize::MAX`
    /// none.
    pub fn two_shot_bytes(mut self, bytes: usize) -> WorldBuilder {
        self.two_shot_bytes = Some(bytes);
        self
    }

    /// Whether a host that drives one rank ([`World::spmd`](crate::World::spmd), each process
    /// under MPI) runs a call itself when its rank has nothing queued, instead of handing it to
    /// the rank's worker (default on, or `PLD_INLINE=0`): a hand-off between threads costs more
    /// than a small collective. Calls still return as soon as they are queued otherwise.
    pub fn inline(mut self, inline: bool) -> WorldBuilder {
        self.inline = Some(inline);
        self
    }

    /// Largest payload per rank a collective sends as LL messages (default
    /// [`DEFAULT_LL_BYTES`], or `PLD_LL_BYTES`), at most [`LL_MAX_BYTES`](pld_model::LL_MAX_BYTES);
    /// 0 turns them off.
    pub fn ll_bytes(mut self, bytes: usize) -> WorldBuilder {
        self.ll_bytes = Some(bytes);
        self
    }

    /// How many of its last calls each rank's flight recorder keeps for hang reports and
    /// mismatch errors (default `PLD_FLIGHT_RECORDER`, else [`DEFAULT_FLIGHT_RECORDER`]); 0 keeps
    /// none (reports then name the call in flight and the last completed only by number); at
    /// most [`MAX_FLIGHT_RECORDER`].
    pub fn flight_recorder(mut self, calls: usize) -> WorldBuilder {
        self.flight_recorder = Some(calls);
        self
    }

    /// Records a trace of every call on every rank and writes it to `path` when the world is
    /// dropped (default `PLD_TRACE`, else none): Chrome's Trace Event Format, which Perfetto
    /// and `chrome://tracing` open. Under MPI each process writes its rank's events to
    /// `path` with the rank before the extension (`trace.json` -> `trace.3.json`); `pld-trace
    /// merge` puts them on one timeline.
    pub fn trace(mut self, path: impl Into<PathBuf>) -> WorldBuilder {
        self.trace = Some(path.into());
        self
    }

    /// How many calls a trace keeps per rank: the last ones (default `PLD_TRACE_EVENTS`, else
    /// [`DEFAULT_TRACE_EVENTS`]; events are kept in chunks of up to 65536, and up to two chunks
    /// more may be kept). A longer run drops its oldest
    /// events and reuses their memory; the trace file and a line on standard error say how many
    /// each rank dropped.
    pub fn trace_events(mut self, calls: usize) -> WorldBuilder {
        self.trace_events = Some(calls);
        self
    }

    /// Writes the flight recorder of every rank of this process to `path` as a trace file when
    /// a call fails (default `PLD_TRACE_ON_ERROR`, else none): the last calls of each rank with
    /// their times and states. Recording times costs a clock read per call, so it is off
    /// unless asked for.
    pub fn trace_on_error(mut self, path: impl Into<PathBuf>) -> WorldBuilder {
        self.trace_on_error = Some(path.into());
        self
    }

    /// Every setting resolved and validated: the builder's, else the environment's, else the
    /// default (`default_window_bytes`: the launcher's).
    pub(crate) fn settings(&self, default_window_bytes: usize) -> Result<Settings> {
        let timeout = match self.timeout {
            Some(t) if t.is_zero() => return Err(invalid("WorldBuilder::timeout", "0 s", TIME_FORM)),
            Some(t) => t,
            None => env_parsed("PLD_TIMEOUT_MS", TIME_FORM, parse_time)?
                .unwrap_or(Duration::from_millis(DEFAULT_TIMEOUT_MS)),
        };
        let window_bytes = match self.window_bytes {
            Some(bytes) => {
                check_heap(bytes).ok_or_else(|| invalid("WorldBuilder::window_bytes", bytes, &heap_form()))?
            }
            None => match env_raw("PLD_WINDOW_BYTES") {
                Some(raw) => parse_size(&raw)
                    .and_then(check_heap)
                    .ok_or_else(|| invalid("PLD_WINDOW_BYTES", &raw, &heap_form()))?,
                None => default_window_bytes,
            },
        };
        let two_shot_bytes = self
            .two_shot_bytes
            .map_or_else(|| env_parsed("PLD_TWO_SHOT_BYTES", SIZE_FORM, parse_size), |b| Ok(Some(b)))?;
        let ll_form = format!("a byte count of at most {LL_MAX_BYTES} (128 KiB less the header), or 0 for none");
        let ll_bytes = match self.ll_bytes {
            Some(bytes) if bytes as u64 > LL_MAX_BYTES => {
                return Err(invalid("WorldBuilder::ll_bytes", bytes, &ll_form));
            }
            Some(bytes) => bytes,
            None => match env_raw("PLD_LL_BYTES") {
                Some(raw) => parse_size(&raw)
                    .filter(|&b| b as u64 <= LL_MAX_BYTES)
                    .ok_or_else(|| invalid("PLD_LL_BYTES", &raw, &ll_form))?,
                None => DEFAULT_LL_BYTES,
            },
        };
        Ok(Settings {
            timeout,
            window_bytes,
            two_shot_override: two_shot_bytes,
            ll_bytes,
            inline: match self.inline {
                Some(inline) => inline,
                None => env_parsed("PLD_INLINE", FLAG_FORM, parse_flag)?.unwrap_or(true),
            },
            pin: env_parsed("PLD_PIN", FLAG_FORM, parse_flag)?.unwrap_or(true),
            check_calls: self.check_calls,
            flight_recorder: match self.flight_recorder {
                Some(calls) if calls > MAX_FLIGHT_RECORDER => {
                    return Err(invalid("WorldBuilder::flight_recorder", calls, CALLS_FORM));
                }
                Some(calls) => calls,
                None => env_parsed("PLD_FLIGHT_RECORDER", CALLS_FORM, |raw| {
                    raw.trim().parse::<usize>().ok().filter(|&n| n <= MAX_FLIGHT_RECORDER)
                })?
                .unwrap_or(DEFAULT_FLIGHT_RECORDER),
            },
            trace: self.trace.clone().or_else(|| env_path("PLD_TRACE")),
            trace_events: match self.trace_events {
                Some(0) => return Err(invalid("WorldBuilder::trace_events", 0, COUNT_FORM)),
                Some(calls) => calls,
                None => env_parsed("PLD_TRACE_EVENTS", COUNT_FORM, |raw| {
                    raw.trim().parse::<usize>().ok().filter(|&n| n > 0)
                })?
                .unwrap_or(DEFAULT_TRACE_EVENTS),
            },
            trace_on_error: self.trace_on_error.clone().or_else(|| env_path("PLD_TRACE_ON_ERROR")),
        })
    }
}

impl Settings {
    /// The size from which a mesh all_reduce over `nranks` ranks (the world's, or a group's)
    /// runs two-shot: the setting if one was given, else the measured default for that count.
    pub(crate) fn two_shot_bytes_for(&self, nranks: usize) -> usize {
        self.two_shot_override.unwrap_or(if nranks <= 2 {
            DEFAULT_TWO_SHOT_BYTES_2_RANKS
        } else {
            DEFAULT_TWO_SHOT_BYTES
        })
    }
}

/// A world's settings, resolved and validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) timeout: Duration,
    pub(crate) window_bytes: usize,
    /// `PLD_TWO_SHOT_BYTES` or the builder's value, if given: then every call uses it.
    pub(crate) two_shot_override: Option<usize>,
    pub(crate) ll_bytes: usize,
    pub(crate) inline: bool,
    pub(crate) pin: bool,
    pub(crate) check_calls: bool,
    /// Calls each rank's flight recorder keeps (0: none).
    pub(crate) flight_recorder: usize,
    /// Where the trace goes, when one is recorded.
    pub(crate) trace: Option<PathBuf>,
    /// Calls a trace keeps per rank (the last ones).
    pub(crate) trace_events: usize,
    /// Where the flight recorder goes when a call fails, when asked for.
    pub(crate) trace_on_error: Option<PathBuf>,
}

impl Settings {
    /// The LL layout these settings give a world of `nranks` in windows of `window` bytes,
    /// deeper where its node's ranks outnumber the cores (`crowded`; None: no LL messages).
    pub(crate) fn ll_layout(&self, nranks: usize, window: usize, crowded: bool) -> Option<LlLayout> {
        LlLayout::new(nranks as u64, self.ll_bytes as u64, LlLayout::deep_room(window as u64, crowded))
    }

    /// The settings every process of a job must share, as (what sets it, value): they shape
    /// each window's layout or the protocol on the wire. (A different `PLD_TWO_SHOT_BYTES` is
    /// caught as a mismatched call; the deadline and the inline choice are each process's.)
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn shared_by_every_process(&self, rma_forced: bool) -> [(&'static str, u64); 4] {
        [
            ("PLD_WINDOW_BYTES", self.window_bytes as u64),
            ("PLD_LL_BYTES", self.ll_bytes as u64),
            ("PLD_MPI_RMA", u64::from(rma_forced)),
            ("WorldBuilder::check_calls", u64::from(self.check_calls)),
        ]
    }
}

/// The heap size rounded up to whole cache lines, if that fits in memory at all.
fn check_heap(bytes: usize) -> Option<usize> {
    bytes
        .checked_next_multiple_of(crate::memory::ALIGN)
        .filter(|&rounded| rounded > 0 && rounded <= isize::MAX as usize)
}

fn heap_form() -> String {
    format!("{SIZE_FORM}; more than 0 and less than {} bytes", isize::MAX)
}

/// `PLD_NRANKS`: the rank count of a local world started from the environment.
pub(crate) fn env_nranks() -> Result<usize> {
    Ok(env_parsed("PLD_NRANKS", COUNT_FORM, |raw| raw.trim().parse::<usize>().ok().filter(|&n| n > 0))?
        .unwrap_or(DEFAULT_NRANKS))
}

/// `PLD_MPI_RMA`: whether one-sided RMA is forced even where windows could be shared.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn env_mpi_rma() -> Result<bool> {
    Ok(env_parsed("PLD_MPI_RMA", FLAG_FORM, parse_flag)?.unwrap_or(false))
}

fn invalid(setting: &str, value: impl std::fmt::Display, expected: &str) -> Error {
    Error::InvalidSetting { setting: setting.to_owned(), value: value.to_string(), expected: expected.to_owned() }
}

/// A path variable: unset or empty is none.
fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

fn env_raw(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

/// The variable `name` parsed by `parse`; unset is `None`, unparsable an error naming `form`.
fn env_parsed<T>(name: &str, form: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Option<T>> {
    let Some(raw) = env_raw(name) else { return Ok(None) };
    parse(&raw).map(Some).ok_or_else(|| invalid(name, &raw, form))
}

/// A byte count: digits, then optionally a unit (K, M, G, T, with or without `iB`/`B`, any
/// case; powers of 1024), spaces allowed between. Overflow is no size.
pub(crate) fn parse_size(raw: &str) -> Option<usize> {
    let raw = raw.trim();
    let digits = raw.find(|c: char| !c.is_ascii_digit()).unwrap_or(raw.len());
    let (number, unit) = raw.split_at(digits);
    let number: u64 = number.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    let bytes = number.checked_mul(1u64 << shift)?;
    usize::try_from(bytes).ok()
}

/// A positive duration: digits, then `ms` (the default) or `s`.
pub(crate) fn parse_time(raw: &str) -> Option<Duration> {
    let raw = raw.trim();
    let digits = raw.find(|c: char| !c.is_ascii_digit()).unwrap_or(raw.len());
    let (number, unit) = raw.split_at(digits);
    let number: u64 = number.parse().ok()?;
    let duration = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "ms" => Duration::from_millis(number),
        "s" => Duration::from_secs(number),
        _ => return None,
    };
    (!duration.is_zero()).then_some(duration)
}

/// A yes/no setting.
pub(crate) fn parse_flag(raw: &str) -> Option<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Some(true),
        "0" | "false" | "off" | "no" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("1 GiB"), Some(1 << 30));
        assert_eq!(parse_size("2mb"), Some(2 << 20));
        for bad in ["", "abc", "-5", "1.5G", "1Q", "16777216T", "99999999999999999999"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("1500"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_time("2s"), Some(Duration::from_secs(2)));
        assert_eq!(parse_time("250 ms"), Some(Duration::from_millis(250)));
        for bad in ["0", "0s", "-5", "garbage", "1h", "18446744073709551616"] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn flags() {
        assert_eq!(parse_flag("0"), Some(false));
        assert_eq!(parse_flag(" On "), Some(true));
        assert_eq!(parse_flag("maybe"), None);
    }
}
