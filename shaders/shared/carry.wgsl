// A row's partial sum left over at the end of a tile or interval, added into `sums` by
// spmv_carry_fixup. A row >= the row count marks "no carry".
struct Carry {
    row: u32,
    value: Acc,
}
