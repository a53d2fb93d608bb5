use std::fmt;

/// How a reducing collective combines the values of the ranks.
///
/// Integer `Sum` and `Prod` wrap on overflow (two's complement), as NCCL and MPI do in practice.
/// f16 and bf16 are combined in f32 and rounded back to nearest-even after every step. Float
/// `Max` and `Min` propagate NaN: if any rank holds NaN at an index, the result there is NaN.
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
}

impl ReduceOp {
    /// Every op, in a fixed order.
    pub const ALL: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Prod];

    /// The keyword used in source code and kernel symbols (`sum`, `max`, `min`, `prod`).
    pub const fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Prod => "prod",
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
