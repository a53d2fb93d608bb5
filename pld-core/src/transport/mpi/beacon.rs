//! Liveness beacons: whether a peer process still lives, told without MPI.
//!
//! Every process listens on a TCP port of its own (on every IPv4 address) from start-up to its
//! end. The kernel completes a connection to a listening socket by itself, so a connect that
//! succeeds says the process is alive whatever its threads are doing; one that is refused says
//! its host answers and the process is gone (its socket closed with it); one that times out or
//! finds no route says the host is gone or cut off. A thread accepts each connection and writes
//! one byte before closing it: whether the launcher has begun ending this process (SIGTERM), so
//! that a job ended everywhere at once is not taken for a lost host. A probe through MPI (a Get
//! on the job's window) depends on when the transport noticed the loss: Open MPI's `osc ucx` has
//! completed a Get from a process just killed as if it had succeeded, so the same failure was
//! reported one run and not the next. A beacon answers the same way every time, and where
//! beacons can tell, a probe from the SIGTERM thread touches no MPI state while the job is
//! coming down.
//!
//! The ports and addresses travel in the start-up exchange that counts the nodes; each process
//! then connects once to a peer (on another node where there is one, spread over them) to learn
//! whether beacons reach across this network at all (a firewall may keep them out). Where they
//! do not, the caller falls back to its MPI probe.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Addresses one process publishes at most.
const MAX_ADDRS: usize = 8;

/// Words one process's beacon takes in the start-up exchange: its port, then its addresses two
/// to a word.
pub(super) const WORDS: usize = 1 + MAX_ADDRS / 2;

/// How long a connect waits for a host that sends nothing back (every address of a peer at
/// once): a live host answers a SYN in well under a millisecond on any network pld runs on.
const PATIENCE: Duration = Duration::from_millis(300);

/// How long a probe waits for the byte a live beacon writes; a connection that was accepted
/// and says nothing in this time is a live process all the same (its thread not scheduled yet).
const ANSWER_PATIENCE: Duration = Duration::from_millis(100);

/// How long the other processes of a host that lost one are asked again while they still
/// answer: a host's processes are killed together but do not end at the same instant (each
/// tears its memory down before its sockets close; on a loaded machine one took over 30 ms
/// longer than its neighbour), so the first probes can find some still there.
const HOST_GRACE: Duration = Duration::from_millis(300);

/// The byte a beacon writes while the process runs, and once the launcher is ending it.
const RUNNING: u8 = b'R';
const ENDING: u8 = b'E';

/// Whether the launcher has begun ending this process (see [`mark_ending`]).
static ENDED: AtomicBool = AtomicBool::new(false);

/// This process's world rank, for the word its probes leave once it is being ended.
static MY_RANK: AtomicU32 = AtomicU32::new(u32::MAX);

/// The ranks whose probes said the launcher was ending them: once gone, they were ended, not
/// lost (the launcher reaches each host's processes at its own time, a second or more apart
/// across hosts).
static ANNOUNCED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// From now on this process's beacon tells probes that it is being ended by the launcher, and
/// its own probes tell each peer they reach the same, so that a peer ended later does not take
/// this process, gone by then, for lost.
pub(super) fn mark_ending() {
    ENDED.store(true, Ordering::Release);
}

/// Whether `rank` said, before it went, that the launcher was ending it.
fn announced(rank: usize) -> bool {
    ANNOUNCED.lock().unwrap_or_else(|p| p.into_inner()).contains(&(rank as u32))
}

/// This process's beacon: where peers find it (the listening socket and its thread live to the
/// end of the process).
pub(super) struct Beacon {
    port: u16,
    /// Non-loopback addresses first, loopback last.
    addrs: Vec<Ipv4Addr>,
}

impl Beacon {
    /// Listens on an ephemeral port of every IPv4 address; `None` where the process cannot
    /// listen, has no IPv4 address that is up, or cannot start the beacon's thread: peers then
    /// probe it through MPI. The thread accepts each connection, writes its byte and closes it,
    /// so that probes from many peers never fill the queue (a full queue drops connections,
    /// which would read as a host gone).
    pub(super) fn open() -> Option<Beacon> {
        let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)).ok()?;
        let port = listener.local_addr().ok()?.port();
        let mut addrs = own_addresses();
        addrs.sort_by_key(|a| a.is_loopback());
        addrs.truncate(MAX_ADDRS);
        if addrs.is_empty() {
            return None;
        }
        std::thread::Builder::new()
            .name("pld-mpi-beacon".into())
            .spawn(move || {
                loop {
                    match listener.accept() {
                        Ok((mut connection, _)) => {
                            let byte = if ENDED.load(Ordering::Acquire) { ENDING } else { RUNNING };
                            // One byte into a fresh socket's empty buffer: it does not block.
                            let _ = connection.write_all(&[byte]);
                            // What the prober leaves, on a thread of its own: a prober slow to
                            // close must not hold up the next one's answer.
                            let _ = std::thread::Builder::new()
                                .name("pld-mpi-beacon-ear".into())
                                .spawn(move || hear_announcement(&mut connection));
                        }
                        // Out of descriptors, say: try again shortly rather than spin.
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })
            .ok()?;
        Some(Beacon { port, addrs })
    }

    /// This beacon in the start-up exchange's words; all zero where there is none.
    pub(super) fn words(beacon: Option<&Beacon>) -> [u64; WORDS] {
        let mut words = [0u64; WORDS];
        if let Some(beacon) = beacon {
            words[0] = u64::from(beacon.port);
            for (i, addr) in beacon.addrs.iter().enumerate() {
                words[1 + i / 2] |= u64::from(u32::from(*addr)) << (32 * (i % 2));
            }
        }
        words
    }
}

/// What a beacon says of a peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    Alive,
    /// Being ended by the launcher (it had its SIGTERM), or gone after saying so.
    Ending,
    /// Gone, and why (in words for the error).
    Gone(String),
    /// The beacon cannot tell (none published, none reachable from here).
    Unknown,
}

/// Every process's beacon as this process sees it.
pub(super) struct Beacons {
    /// By world rank: where its beacon listens (empty: none to try).
    peers: Vec<Vec<SocketAddr>>,
    /// Whether a beacon reached a live peer at start-up (else every verdict is `Unknown`).
    reachable: bool,
}

impl Beacons {
    /// Every process's beacon from the exchanged `rows` (one [`WORDS`]-word row per world rank),
    /// seen from `rank`, then checked once against `witness` (a peer on another node where there
    /// is one).
    pub(super) fn new<'a>(rank: usize, rows: impl Iterator<Item = &'a [u64]>, witness: Option<usize>) -> Beacons {
        MY_RANK.store(rank as u32, Ordering::Relaxed);
        let published: Vec<(u16, Vec<Ipv4Addr>)> = rows.map(decode).collect();
        let mine = published.get(rank).map(|(_, a)| a.clone()).unwrap_or_default();
        // Every address of this host, also those past the published few.
        let own = own_addresses();
        let peers = published.iter().map(|(port, addrs)| order(*port, addrs, &mine, &own)).collect();
        let mut beacons = Beacons { peers, reachable: true };
        beacons.reachable = match witness {
            Some(peer) => matches!(beacons.check(peer), Verdict::Alive | Verdict::Ending),
            None => true,
        };
        beacons
    }

    /// Whether `peer`'s process still lives: alive if any of its addresses accepts a
    /// connection (every address tried at once, so a dead host costs [`PATIENCE`] once), gone
    /// if none does (refused: the host is up and the process gone; else the host did not
    /// answer).
    pub(super) fn check(&self, peer: usize) -> Verdict {
        let Some(addrs) = self.peers.get(peer).filter(|a| !a.is_empty() && self.reachable) else {
            return Verdict::Unknown;
        };
        let tries = each_at_once(addrs, |addr| TcpStream::connect_timeout(addr, PATIENCE));
        let mut connected = None;
        let mut refused = None;
        let mut silent = None;
        for (addr, tried) in addrs.iter().zip(tries) {
            match tried {
                // The first connection answers; the others close here, before it is read.
                Ok(connection) => connected = connected.or(Some(connection)),
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => refused = refused.or(Some(*addr)),
                Err(e) => silent = silent.or(Some((*addr, e))),
            }
        }
        if let Some(connection) = connected {
            return answer(connection);
        }
        // Gone after saying the launcher was ending it: ended with the job, not lost.
        if announced(peer) {
            return Verdict::Ending;
        }
        Verdict::Gone(match (refused, silent) {
            (Some(addr), _) => {
                format!("rank {peer}'s process is gone: its host refused a connection to its beacon ({addr})")
            }
            (None, Some((addr, e))) if e.kind() == ErrorKind::TimedOut => format!(
                "rank {peer}'s host did not answer a connection to its beacon ({addr}) within {} ms",
                PATIENCE.as_millis()
            ),
            (None, Some((addr, e))) => format!("rank {peer}'s host cannot be reached ({addr}): {e}"),
            (None, None) => format!("rank {peer}'s beacon has no address"),
        })
    }

    /// Of `ranks` (the other ranks of a node one of whose processes is gone), those gone too,
    /// checked at once (a host that is gone costs each a connect timeout) and those that still
    /// answer asked again until [`HOST_GRACE`] has passed; `None` where a beacon cannot tell.
    pub(super) fn gone_among(&self, ranks: &[usize]) -> Option<Vec<usize>> {
        let started = Instant::now();
        let mut gone = Vec::new();
        let mut asking = ranks.to_vec();
        while !asking.is_empty() {
            let verdicts = each_at_once(&asking, |&r| self.check(r));
            let mut alive = Vec::new();
            for (&rank, verdict) in asking.iter().zip(verdicts) {
                match verdict {
                    Verdict::Gone(_) => gone.push(rank),
                    Verdict::Alive | Verdict::Ending => alive.push(rank),
                    Verdict::Unknown => return None,
                }
            }
            if started.elapsed() >= HOST_GRACE {
                break;
            }
            asking = alive;
            if !asking.is_empty() {
                std::thread::sleep(Duration::from_millis(25));
            }
        }
        gone.sort_unstable();
        Some(gone)
    }
}

/// What an accepted connection says: the byte its beacon wrote (ending or not); a live process
/// whose thread has not written it in time counts as running. A process being ended leaves its
/// announcement ([`ENDING`] and its rank) before it closes the connection.
fn answer(mut connection: TcpStream) -> Verdict {
    let mut byte = [0u8];
    let _ = connection.set_read_timeout(Some(ANSWER_PATIENCE));
    let verdict = match connection.read(&mut byte) {
        Ok(1) if byte[0] == ENDING => Verdict::Ending,
        _ => Verdict::Alive,
    };
    if ENDED.load(Ordering::Acquire) {
        let rank = MY_RANK.load(Ordering::Relaxed).to_le_bytes();
        let _ = connection.write_all(&[ENDING, rank[0], rank[1], rank[2], rank[3]]);
    }
    verdict
}

/// Reads what a prober left on an accepted connection: nothing (a plain probe closes at once)
/// or an announcement that the launcher is ending it, noted in [`ANNOUNCED`].
fn hear_announcement(connection: &mut TcpStream) {
    let mut words = [0u8; 5];
    let _ = connection.set_read_timeout(Some(ANSWER_PATIENCE));
    if connection.read_exact(&mut words).is_ok() && words[0] == ENDING {
        let rank = u32::from_le_bytes([words[1], words[2], words[3], words[4]]);
        let mut announced = ANNOUNCED.lock().unwrap_or_else(|p| p.into_inner());
        if !announced.contains(&rank) {
            announced.push(rank);
        }
    }
}

/// `f` of each item, on a thread each where there are several (one alone runs here; a thread
/// that cannot be started runs its item here too, after the others).
fn each_at_once<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() < 2 {
        return items.iter().map(&f).collect();
    }
    std::thread::scope(|scope| {
        let f = &f;
        let started: Vec<_> = items
            .iter()
            .map(|item| (item, std::thread::Builder::new().spawn_scoped(scope, move || f(item)).ok()))
            .collect();
        started
            .into_iter()
            .map(|(item, thread)| match thread.map(|t| t.join()) {
                Some(Ok(result)) => result,
                _ => f(item),
            })
            .collect()
    })
}

/// A row of the exchange back to a port and addresses (port 0: no beacon).
fn decode(row: &[u64]) -> (u16, Vec<Ipv4Addr>) {
    let port = row.first().map_or(0, |&w| w as u16);
    let addrs = row
        .iter()
        .skip(1)
        .flat_map(|&w| [w as u32, (w >> 32) as u32])
        .filter(|&a| a != 0)
        .map(Ipv4Addr::from)
        .collect();
    (port, addrs)
}

/// Where to try a peer's beacon, from a process that published `mine` and has `own` (every
/// address of its host). A peer that published exactly `mine` shares this process's network
/// (the same host, the same namespace): loopback first. Any other peer is tried only at
/// addresses this host does not have: an address both have (loopback, a container bridge such
/// as docker's 172.17.0.1 on every host) would reach a socket here, not the peer's.
fn order(port: u16, theirs: &[Ipv4Addr], mine: &[Ipv4Addr], own: &[Ipv4Addr]) -> Vec<SocketAddr> {
    if port == 0 {
        return Vec::new();
    }
    let same_network = !theirs.is_empty() && theirs == mine;
    let addrs: Vec<Ipv4Addr> = if same_network {
        let mut all = theirs.to_vec();
        all.sort_by_key(|a| !a.is_loopback());
        all
    } else {
        theirs.iter().copied().filter(|a| !a.is_loopback() && !mine.contains(a) && !own.contains(a)).collect()
    };
    addrs.into_iter().map(|a| SocketAddr::V4(SocketAddrV4::new(a, port))).collect()
}

/// The IPv4 addresses of this host's interfaces that are up.
fn own_addresses() -> Vec<Ipv4Addr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a list this function frees below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Vec::new();
    }
    let mut addrs = Vec::new();
    let mut at = list;
    while !at.is_null() {
        // SAFETY: a node of the list getifaddrs returned, alive until freeifaddrs.
        let entry = unsafe { &*at };
        let up = entry.ifa_flags & libc::IFF_UP as u32 != 0;
        // SAFETY: `ifa_addr` is null or points to a sockaddr of the family it names; an
        // AF_INET one is a sockaddr_in.
        unsafe {
            if up && !entry.ifa_addr.is_null() && i32::from((*entry.ifa_addr).sa_family) == libc::AF_INET {
                let inet = &*entry.ifa_addr.cast::<libc::sockaddr_in>();
                let addr = Ipv4Addr::from(u32::from_be(inet.sin_addr.s_addr));
                if !addrs.contains(&addr) {
                    addrs.push(addr);
                }
            }
        }
        at = entry.ifa_next;
    }
    // SAFETY: the list getifaddrs returned, freed once.
    unsafe { libc::freeifaddrs(list) };
    addrs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(beacon: &Beacon) -> Vec<u64> {
        Beacon::words(Some(beacon)).to_vec()
    }

    #[test]
    fn words_carry_the_port_and_every_address() {
        let beacon = Beacon { port: 4711, addrs: vec![Ipv4Addr::new(10, 77, 0, 2), Ipv4Addr::LOCALHOST] };
        assert_eq!(decode(&row(&beacon)), (4711, beacon.addrs.clone()));
        assert_eq!(decode(&Beacon::words(None)), (0, Vec::new()));
    }

    #[test]
    fn a_peer_elsewhere_is_tried_only_at_addresses_this_host_lacks() {
        let docker = Ipv4Addr::new(172, 17, 0, 1);
        let mine = [Ipv4Addr::new(10, 77, 0, 1), docker, Ipv4Addr::LOCALHOST];
        let theirs = [Ipv4Addr::new(10, 77, 0, 2), docker, Ipv4Addr::LOCALHOST];
        assert_eq!(order(9, &theirs, &mine, &mine), vec![SocketAddr::from(([10, 77, 0, 2], 9))]);
        // An address of this host past the few it published is left out too.
        let bridge = Ipv4Addr::new(192, 168, 122, 1);
        let theirs_too = [Ipv4Addr::new(10, 77, 0, 2), bridge];
        let own = [mine.as_slice(), &[bridge]].concat();
        assert_eq!(order(9, &theirs_too, &mine, &own), vec![SocketAddr::from(([10, 77, 0, 2], 9))]);
        // The same network: loopback first.
        assert_eq!(order(9, &mine, &mine, &mine)[0], SocketAddr::from(([127, 0, 0, 1], 9)));
        assert!(order(0, &theirs, &mine, &mine).is_empty());
    }

    #[test]
    fn a_live_beacon_answers_and_a_closed_port_reads_as_gone() {
        let live = Beacon::open().expect("a beacon on this host");
        // A port that was listening a moment ago and is closed now: refused, like a process
        // that died.
        let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dead = Beacon { port: closed, addrs: live.addrs.clone() };
        let rows = [row(&live), row(&live), row(&dead)];
        let beacons = Beacons::new(0, rows.iter().map(Vec::as_slice), Some(1));
        assert_eq!(beacons.check(1), Verdict::Alive);
        // A process the launcher is ending says so (this one, and its beacon is the live one),
        // and leaves its announcement with the beacons it probes.
        mark_ending();
        assert_eq!(beacons.check(1), Verdict::Ending);
        ENDED.store(false, Ordering::Release);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !announced(0) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(announced(0), "the probe's announcement was not heard");
        ANNOUNCED.lock().unwrap().clear();
        match beacons.check(2) {
            Verdict::Gone(why) => assert!(why.contains("rank 2's process is gone"), "{why}"),
            other => panic!("a closed port read as {other:?}"),
        }
        // Of a host's other ranks, those gone (the live one asked again until the grace ends).
        let started = Instant::now();
        assert_eq!(beacons.gone_among(&[1, 2]), Some(vec![2]));
        assert!(started.elapsed() >= HOST_GRACE);
        assert_eq!(beacons.gone_among(&[2]), Some(vec![2]));
        // A witness that does not answer leaves every verdict to the MPI probe.
        let blind = Beacons::new(0, rows.iter().map(Vec::as_slice), Some(2));
        assert_eq!(blind.check(1), Verdict::Unknown);
        assert_eq!(blind.gone_among(&[1, 2]), None);
    }
}
