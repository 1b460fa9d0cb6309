// GEMV on rows whose length is a multiple of 4, read as vec4 (see shared/gemv_rows_body.wgsl).
#import real

alias Unit = vec4<Real>;

fn unit_dot(a: Unit, b: Unit) -> Acc {
    return dot(vec4<Acc>(a), vec4<Acc>(b));
}

#import gemv_rows_body
