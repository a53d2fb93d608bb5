//! Call fingerprints: what one collective call is (collective and algorithm, op, dtype, root,
//! element count, row length) and its number on the rank, in the four words the device compares before it
//! moves any data (`pld_check_peer` in the ABI header). Only this module gives the words meaning.

use pld_model::{DType, KernelKind, ReduceOp};

use crate::device::abi::FingerprintWords;

/// One collective call as every rank must agree on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    /// The call's number on its rank, from 1.
    pub seq: u64,
    /// The kernel, which names the collective and its algorithm (mesh one-shot, two-shot, ring).
    pub kind: KernelKind,
    /// The reduce op of reducing collectives.
    pub op: Option<ReduceOp>,
    /// The element type (`None` for a barrier).
    pub dtype: Option<DType>,
    /// The broadcast root (0 otherwise).
    pub root: i32,
    /// Elements of the call's main operand (all_gather: of `local`; all_to_all(_v): of `input`).
    pub count: u64,
    /// Elements of one row of the main operand: views of one size with other rows (an
    /// all_to_all_v input of [4, 3] against [6, 2]) are different calls. Kept to 32 bits in
    /// the words (folded: two lengths differ there unless they differ by a multiple of 2^32).
    pub row_len: u64,
}

/// A fieldless enum's code in the words: its place in its `ALL` list plus one (0: none). The
/// lists are in declaration order (tested), so the place is the discriminant: a cast, not the
/// search through the list that it was (which the optimiser happened to fold).
macro_rules! code {
    ($x:expr) => {
        $x as u64 + 1
    };
}

fn from_index<T: Copy>(all: &[T], i: u64) -> Option<Option<T>> {
    match i {
        0 => Some(None),
        i => all.get(i as usize - 1).copied().map(Some),
    }
}

impl Fingerprint {
    /// The words the device publishes and compares. Inline: a generic caller (send!, recv!) is
    /// built in the user's crate, and reading back words a call stored one by one stalled it.
    #[inline]
    pub fn words(&self) -> FingerprintWords {
        let kind = code!(self.kind);
        let op = self.op.map_or(0, |op| code!(op));
        let dtype = self.dtype.map_or(0, |d| code!(d));
        let row = (self.row_len ^ self.row_len >> 32) & 0xffff_ffff;
        FingerprintWords {
            seq: self.seq,
            what: [kind | op << 8 | dtype << 16, self.root as u32 as u64 | row << 32, self.count],
        }
    }

    /// Decodes words published by a peer; `None` when they are no fingerprint this runtime
    /// writes (a slot never written, or one written by something else).
    pub fn decode(words: FingerprintWords) -> Option<Fingerprint> {
        let [code, root, count] = words.what;
        if words.seq == 0 || code >> 24 != 0 {
            return None;
        }
        let kind = from_index(&KernelKind::ALL, code & 0xff)??;
        Some(Fingerprint {
            seq: words.seq,
            kind,
            op: from_index(&ReduceOp::ALL, (code >> 8) & 0xff)?,
            dtype: from_index(&DType::ALL, (code >> 16) & 0xff)?,
            root: root as u32 as i32,
            count,
            row_len: root >> 32,
        })
    }

    /// `all_reduce(mode = mesh, op = sum, dtype = f32, count = 1024) as call #3`.
    pub fn describe(&self) -> String {
        if self.kind == KernelKind::SendRecv {
            // A message: `root` and `row_len` hold its sender and receiver.
            let dtype = self.dtype.map_or("?".to_owned(), |d| d.to_string());
            return format!(
                "{} x {dtype} from rank {} to rank {} (message #{})",
                self.count, self.root, self.row_len, self.seq
            );
        }
        let mut args = Vec::new();
        match self.kind {
            KernelKind::AllReduceMesh => args.push("mode = mesh".to_owned()),
            KernelKind::AllReduceTwoShot => args.push("mode = mesh (two-shot)".to_owned()),
            KernelKind::AllReduceRing => args.push("mode = ring".to_owned()),
            KernelKind::Broadcast | KernelKind::Reduce | KernelKind::Gather | KernelKind::Scatter => {
                args.push(format!("root = {}", self.root))
            }
            _ => {}
        }
        if let Some(op) = self.op {
            args.push(format!("op = {op}"));
        }
        if let Some(dtype) = self.dtype {
            args.push(format!("dtype = {dtype}"));
            args.push(format!("count = {}", self.count));
            if self.kind == KernelKind::AllToAllV {
                args.push(format!("row_len = {}", self.row_len));
            }
        }
        format!("{}({}) as call #{}", self.kind.collective().name(), args.join(", "), self.seq)
    }
}

/// How a peer's published words read in a message.
pub(crate) fn describe_words(words: FingerprintWords) -> String {
    match Fingerprint::decode(words) {
        Some(fingerprint) => fingerprint.describe(),
        None if words.seq == 0 => "no collective".to_owned(),
        None => format!("an unknown call (fingerprint {:#x} {:x?})", words.seq, words.what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lists_are_in_declaration_order() {
        // `code!` relies on it: a list reordered would change no code, and decode would misread.
        assert!(KernelKind::ALL.iter().enumerate().all(|(i, &k)| k as usize == i));
        assert!(ReduceOp::ALL.iter().enumerate().all(|(i, &o)| o as usize == i));
        assert!(DType::ALL.iter().enumerate().all(|(i, &d)| d as usize == i));
    }

    #[test]
    fn every_fingerprint_round_trips_through_its_words() {
        for kind in KernelKind::ALL {
            for op in [None, Some(ReduceOp::Max)] {
                for dtype in [None, Some(DType::BF16), Some(DType::U64)] {
                    let f = Fingerprint { seq: 7, kind, op, dtype, root: 3, count: 1 << 40, row_len: 12 };
                    assert_eq!(Fingerprint::decode(f.words()), Some(f));
                }
            }
        }
        assert_eq!(describe_words(FingerprintWords::default()), "no collective");
    }

    #[test]
    fn views_with_other_rows_are_other_calls() {
        let rows = |row_len| Fingerprint {
            seq: 1,
            kind: KernelKind::AllToAllV,
            op: None,
            dtype: Some(DType::F32),
            root: 0,
            count: 12,
            row_len,
        };
        assert_ne!(rows(3).words(), rows(2).words());
        assert!(rows(3).describe().contains("row_len = 3"), "{}", rows(3).describe());
    }

    #[test]
    fn a_description_names_what_differs() {
        let f = Fingerprint {
            seq: 3,
            kind: KernelKind::AllReduceMesh,
            op: Some(ReduceOp::Sum),
            dtype: Some(DType::F32),
            root: 0,
            count: 1024,
            row_len: 1024,
        };
        assert_eq!(f.describe(), "all_reduce(mode = mesh, op = sum, dtype = f32, count = 1024) as call #3");
    }
}
