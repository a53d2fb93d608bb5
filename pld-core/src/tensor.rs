//! [`Tensor`]: a host-side n-dimensional array, the data a host program stages into windows.

use pld_model::Element;

use crate::memory::Shape;

/// A dense row-major array in host memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor<T> {
    shape: Shape,
    data: Vec<T>,
}

impl<T: Element> Tensor<T> {
    /// A tensor of zeros.
    pub fn zeros(shape: impl Into<Shape>) -> Tensor<T> {
        let shape = shape.into();
        Tensor { data: vec![T::zeroed(); shape.len()], shape }
    }

    /// A tensor whose element at each index is `f(index)`.
    pub fn from_fn<const N: usize>(dims: [usize; N], mut f: impl FnMut([usize; N]) -> T) -> Tensor<T> {
        let shape = Shape::from(dims);
        let mut data = Vec::with_capacity(shape.len());
        let mut index = [0usize; N];
        for _ in 0..shape.len() {
            data.push(f(index));
            for d in (0..N).rev() {
                index[d] += 1;
                if index[d] < dims[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        Tensor { shape, data }
    }

    /// A tensor of `shape` over `data`; `None` if the lengths differ.
    pub fn from_vec(shape: impl Into<Shape>, data: Vec<T>) -> Option<Tensor<T>> {
        let shape = shape.into();
        (shape.len() == data.len()).then_some(Tensor { shape, data })
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// All elements, row-major.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// All elements, row-major, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The elements of index `i` of the outermost dimension (e.g. one rank's slice of
    /// `[nranks, ...]`). Panics if `i` is out of range, like slice indexing.
    pub fn row(&self, i: usize) -> &[T] {
        let n = self.row_len();
        &self.data[i * n..(i + 1) * n]
    }

    /// Mutable [`Tensor::row`].
    pub fn row_mut(&mut self, i: usize) -> &mut [T] {
        let n = self.row_len();
        &mut self.data[i * n..(i + 1) * n]
    }

    fn row_len(&self) -> usize {
        self.shape.dims().iter().skip(1).product()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_fn_walks_row_major() {
        let t = Tensor::<i32>::from_fn([2, 3], |[r, c]| (r * 10 + c) as i32);
        assert_eq!(t.as_slice(), &[0, 1, 2, 10, 11, 12]);
        assert_eq!(t.row(1), &[10, 11, 12]);
    }
}
