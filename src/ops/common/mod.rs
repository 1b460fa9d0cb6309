//! Building blocks every op uses: α/β handling, operand checks, lane groups, carries.

mod carries;
mod checks;
mod groups;
mod scaling;

pub(crate) use carries::Carries;
pub(crate) use checks::{check_len, Operands};
pub(crate) use groups::Groups;
pub(crate) use scaling::ScalarBinds;
