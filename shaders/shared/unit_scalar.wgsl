// Units of one element: rows of any length, read one element at a time.
alias Unit = Real;

fn unit_dot(a: Unit, b: Unit) -> Acc {
    return Acc(a) * Acc(b);
}
