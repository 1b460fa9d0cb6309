// GEMV on rows whose length is a multiple of 4, read as vec4 (see shared/gemv_rows_body.wgsl).
#import real
#import unit_vec4
#import gemv_rows_body
