/* usage_bits.h - the buffer usage bits, one table (an X-macro list, as wgpu_functions.h):
 * VN_USAGE(name, bit) a row, one a line, the bit WGPUBufferUsage's. vn_buffer.h makes the
 * vn_buffer_usage enum of it (VN_USAGE_<name>; scripts/ffi_build.py writes it out for cffi),
 * and a message naming usages writes each row's name; vyre_native.BufferUsage has a
 * member for each (tests/test_structure.py holds it to this table). No include guard: it
 * is included once per use. */
VN_USAGE(MAP_READ, 0x1)
VN_USAGE(MAP_WRITE, 0x2)
VN_USAGE(COPY_SRC, 0x4)
VN_USAGE(COPY_DST, 0x8)
VN_USAGE(INDEX, 0x10)
VN_USAGE(VERTEX, 0x20)
VN_USAGE(UNIFORM, 0x40)
VN_USAGE(STORAGE, 0x80)
VN_USAGE(INDIRECT, 0x100)
VN_USAGE(QUERY_RESOLVE, 0x200)
