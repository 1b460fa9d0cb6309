//! Building blocks every op uses: α/β handling, operand checks, lane groups, carries, and
//! the row blocks of the sparse × dense ops.

mod carries;
mod checks;
mod groups;
mod row_blocks;
mod scaling;

pub(crate) use carries::Carries;
pub(crate) use checks::{check_len, Operands};
pub(crate) use groups::Groups;
pub(crate) use row_blocks::{
    block_split, blocks_of, check_row_major, row_blocks, transpose_split, Gathered, RowBlock, TileShape, MIN_TASKS,
};
pub(crate) use scaling::ScalarBinds;
