use std::fmt;

/// How a reducing collective combines the values of the ranks.
///
/// Integer `Sum` and `Prod` wrap on overflow (two's complement), as NCCL and MPI do in practice.
/// f16 and bf16 are combined in f32 and rounded back to nearest-even after every step. Float
/// `Max` and `Min` propagate NaN: if any rank holds NaN at an index, the result there is NaN.
/// `Avg` is the sum (as `Sum` computes it, in rank order) divided once by the call's rank count:
/// floats by one IEEE division (f16 and bf16 in f32, rounded once), integers with truncation
/// toward zero of the (wrapping) sum, as NCCL's `ncclAvg` does. `PremulSum` is NCCL's
/// premultiplied sum: each rank's input times that rank's scalar (rounded in the dtype, as the
/// product would be), then summed as `Sum` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum ReduceOp {
    /// Addition.
    #[default]
    Sum,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Multiplication.
    Prod,
    /// The mean: the sum divided by the rank count.
    Avg,
    /// The sum of each rank's input multiplied by its own scalar.
    PremulSum,
}

impl ReduceOp {
    /// Every op, in a fixed order.
    pub const ALL: [ReduceOp; 6] =
        [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod, ReduceOp::Avg, ReduceOp::PremulSum];

    /// The ops the device kernels combine with (one kernel variant each); `Avg` runs `Sum`'s.
    pub const COMBINING: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod];

    /// The op whose kernel this op runs: itself, or `Sum` for `Avg` (divided afterwards) and
    /// `PremulSum` (scaled before).
    pub const fn kernel_op(self) -> ReduceOp {
        match self {
            ReduceOp::Avg | ReduceOp::PremulSum => ReduceOp::Sum,
            op => op,
        }
    }

    /// The keyword used in source code and kernel symbols (`sum`, `max`, `min`, `prod`, `avg`, `premul_sum`).
    pub const fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Prod => "prod",
            ReduceOp::Avg => "avg",
            ReduceOp::PremulSum => "premul_sum",
        }
    }

    /// Parses a name produced by [`ReduceOp::name`].
    pub fn from_name(name: &str) -> Option<ReduceOp> {
        ReduceOp::ALL.into_iter().find(|op| op.name() == name)
    }
}

impl fmt::Display for ReduceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
