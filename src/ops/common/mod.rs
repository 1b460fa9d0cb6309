//! Building blocks every op uses: α/β handling, operand checks, lane groups, published
//! partial sums, and the row blocks of the sparse × dense ops.

mod checks;
mod groups;
mod ready_sums;
mod row_blocks;
mod scaling;

pub(crate) use checks::{check_len, Operands};
pub(crate) use groups::Groups;
#[cfg(test)]
pub(crate) use ready_sums::RECOMPUTE_PIECES;
pub(crate) use ready_sums::{ready_sums_scratch, recompute_pieces};
pub(crate) use row_blocks::{
    block_split, blocks_of, check_row_major, check_width, row_blocks, transpose_split, Gathered, RowBlock, TileShape,
    MIN_TASKS,
};
pub(crate) use scaling::ScalarBinds;
