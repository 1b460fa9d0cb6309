// GEMV on rows of any length, one element at a time (see shared/gemv_rows_body.wgsl).
#import real
#import unit_scalar
#import gemv_rows_body
