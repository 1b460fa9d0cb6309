// GEMV with the transpose on rows whose length is a multiple of 4, read as vec4 (see
// shared/gemv_columns_body.wgsl).
#import real

alias Unit = vec4<Real>;
alias Units = vec4<Acc>;
const UNIT_LEN: u32 = 4u;

fn unit_get(u: Units, k: u32) -> Acc {
    return u[k];
}

fn unit_set(u: Units, k: u32, v: Acc) -> Units {
    var w = u;
    w[k] = v;
    return w;
}

#import gemv_columns_body
