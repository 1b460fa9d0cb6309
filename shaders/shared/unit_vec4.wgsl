// Units of four elements: rows whose length is a multiple of 4, read as vec4.
alias Unit = vec4<Real>;

fn unit_dot(a: Unit, b: Unit) -> Acc {
    return dot(vec4<Acc>(a), vec4<Acc>(b));
}
