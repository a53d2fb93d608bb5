//! Liveness beacons: whether a peer process still lives, told without MPI.
//!
//! Every process listens on a TCP port of its own from start-up to its end. The kernel completes
//! a connection to a listening socket by itself, so a connect that succeeds says the process is
//! alive whatever its threads are doing; one that is refused says its host answers and the
//! process is gone (its socket closed with it); one that times out or finds no route says the
//! host is gone or cut off. A probe through MPI (a Get on the job's window) depends on when the
//! transport noticed the loss: Open MPI's `osc ucx` has completed a Get from a process just
//! killed as if it had succeeded, so the same failure was reported one run and not the next.
//! A beacon answers the same way every time, and a probe from the SIGTERM thread touches no MPI
//! state while the job is coming down.
//!
//! The ports and addresses travel in the start-up exchange that counts the nodes; each process
//! then connects once to a peer (on another node where there is one) to learn whether beacons
//! reach across this network at all (a firewall may keep them out). Where they do not, the
//! caller falls back to its MPI probe.

use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// Addresses one process publishes at most.
const MAX_ADDRS: usize = 8;

/// Words one process's beacon takes in the start-up exchange: its port, then its addresses two
/// to a word.
pub(super) const WORDS: usize = 1 + MAX_ADDRS / 2;

/// How long a connect waits for a host that sends nothing back: a live host answers a SYN in
/// well under a millisecond on any network pld runs on.
const PATIENCE: Duration = Duration::from_millis(300);

/// How long the other processes of a host that lost one are asked again while they still
/// answer: a host's processes are killed together but do not end at the same instant (each
/// tears its memory down before its sockets close; on a loaded machine one took over 30 ms
/// longer than its neighbour), so the first probes can find some still there.
const HOST_GRACE: Duration = Duration::from_millis(300);

/// This process's beacon: the listening socket (kept open to the end of the process) and where
/// peers find it.
pub(super) struct Beacon {
    port: u16,
    /// Non-loopback addresses first, loopback last.
    addrs: Vec<Ipv4Addr>,
}

impl Beacon {
    /// Listens on an ephemeral port of every IPv4 address; `None` where the process cannot
    /// listen (no IPv4 stack), and peers then probe it through MPI. A thread accepts and drops
    /// each connection so that probes from many peers never fill the queue (a full queue drops
    /// connections, which would read as a host gone).
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
                for connection in listener.incoming() {
                    drop(connection);
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
    /// Gone, and why (in words for the error).
    Gone(String),
    /// The beacon cannot tell (none published, none reachable from here).
    Unknown,
}

/// Every process's beacon as this process sees it.
pub(super) struct Beacons {
    /// By world rank: where its beacon listens, in the order to try (empty: none to try).
    peers: Vec<Vec<SocketAddr>>,
    /// Whether a beacon reached a live peer at start-up (else every verdict is `Unknown`).
    reachable: bool,
}

impl Beacons {
    /// Every process's beacon from the exchanged `rows` (one [`WORDS`]-word row per world rank),
    /// seen from `rank`, then checked once against `witness` (a peer on another node where there
    /// is one).
    pub(super) fn new<'a>(rank: usize, rows: impl Iterator<Item = &'a [u64]>, witness: Option<usize>) -> Beacons {
        let published: Vec<(u16, Vec<Ipv4Addr>)> = rows.map(decode).collect();
        let mine = published.get(rank).map(|(_, a)| a.clone()).unwrap_or_default();
        let peers = published.iter().map(|(port, addrs)| order(*port, addrs, &mine)).collect();
        let mut beacons = Beacons { peers, reachable: true };
        beacons.reachable = match witness {
            Some(peer) => beacons.check(peer) == Verdict::Alive,
            None => true,
        };
        beacons
    }

    /// Whether `peer`'s process still lives: alive if any of its addresses accepts a
    /// connection, gone if none does (refused: the host is up and the process gone; else the
    /// host did not answer).
    pub(super) fn check(&self, peer: usize) -> Verdict {
        let Some(addrs) = self.peers.get(peer).filter(|a| !a.is_empty() && self.reachable) else {
            return Verdict::Unknown;
        };
        let mut refused = None;
        let mut silent = None;
        for addr in addrs {
            match TcpStream::connect_timeout(addr, PATIENCE) {
                Ok(_) => return Verdict::Alive,
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => refused = refused.or(Some(*addr)),
                Err(e) => silent = silent.or(Some((*addr, e))),
            }
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
            let verdicts: Vec<Verdict> = std::thread::scope(|scope| {
                let checks: Vec<_> = asking.iter().map(|&r| scope.spawn(move || self.check(r))).collect();
                checks.into_iter().map(|check| check.join().unwrap_or(Verdict::Unknown)).collect()
            });
            let mut alive = Vec::new();
            for (&rank, verdict) in asking.iter().zip(verdicts) {
                match verdict {
                    Verdict::Gone(_) => gone.push(rank),
                    Verdict::Alive => alive.push(rank),
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

/// Where to try a peer's beacon, from a process with addresses `mine`. A peer with exactly this
/// process's addresses shares its network (the same host, the same namespace): loopback first.
/// Any other peer is tried only at addresses this process does not have itself: an address both
/// have (loopback, a container bridge such as docker's 172.17.0.1 on every host) would reach a
/// socket here, not the peer's.
fn order(port: u16, theirs: &[Ipv4Addr], mine: &[Ipv4Addr]) -> Vec<SocketAddr> {
    if port == 0 {
        return Vec::new();
    }
    let same_network = !theirs.is_empty() && theirs == mine;
    let addrs: Vec<Ipv4Addr> = if same_network {
        let mut all = theirs.to_vec();
        all.sort_by_key(|a| !a.is_loopback());
        all
    } else {
        theirs.iter().copied().filter(|a| !a.is_loopback() && !mine.contains(a)).collect()
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
        assert_eq!(order(9, &theirs, &mine), vec![SocketAddr::from(([10, 77, 0, 2], 9))]);
        // The same network: loopback first.
        assert_eq!(order(9, &mine, &mine)[0], SocketAddr::from(([127, 0, 0, 1], 9)));
        assert!(order(0, &theirs, &mine).is_empty());
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
