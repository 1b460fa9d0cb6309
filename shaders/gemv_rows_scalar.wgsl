// GEMV on rows of any length, one element at a time (see shared/gemv_rows_body.wgsl).
#import real

alias Unit = Real;

fn unit_dot(a: Unit, b: Unit) -> Acc {
    return Acc(a) * Acc(b);
}

#import gemv_rows_body
