//! Structure analyses: work that depends only on a sparsity pattern, done once on the GPU
//! and kept by the matrix (see `matrix::Structure`) for every plan that needs it.

pub(crate) mod coo_intervals;
pub(crate) mod level_sets;
pub(crate) mod merge_path;
pub(crate) mod radix_sort;
pub(crate) mod row_split;
pub(crate) mod scan;
pub(crate) mod team_segments;
pub(crate) mod transpose;
