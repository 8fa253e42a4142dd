/* vn_interop.h - part of the public C API: interop with wgpu-py's objects. vyre_native.h
 * includes it inside its cdef section, after the parts before it, whose types it uses:
 * include vyre_native.h, never this alone. It holds only what that section may
 * (scripts/ffi_build.py reads it in where it is included): no include guard, no
 * preprocessor line but a table's use. */

/* ---- interop with wgpu-py in the same process (csrc/interop/interop.c) ---------------- */

/* Wrap objects another binding of the same wgpu-native library made (wgpu-py):
 * each takes a reference of its own (AddRef), released with the vn object. The
 * handles are the WGPU* pointers as integers. */
vn_status vn_device_adopt(uintptr_t instance, uintptr_t adapter, uintptr_t device, uintptr_t queue, vn_device **out);
/* `mapped`: nonzero when wgpu-py reports the buffer mapped or map-pending (it starts
 * refused, as vn_buffer_set_foreign_state's MAPPED); otherwise adoption finds out whether
 * it was destroyed already, and refuses it then with VN_ERROR_BINDING. */
vn_status vn_buffer_adopt(vn_device *device, uintptr_t buffer, int mapped, vn_buffer **out);
/* The buffer's WGPUBuffer with one new reference, which the caller must release. */
vn_status vn_buffer_export(vn_buffer *buffer, uintptr_t *out);
/* What wgpu-py does to a buffer it shares with this layer (adopted, or handed over by
 * vn_buffer_export). wgpu-native aborts the process on submitting work that uses a
 * buffer that is mapped, map-pending or destroyed, and cannot be asked which it is, so
 * the Python side reports wgpu-py's map, unmap and destroy calls here (from hooks on
 * the one object through which wgpu-py calls wgpu-native: vyre_native/interop.py), and
 * every submit re-checks its buffers under the device's life lock: one that uses such
 * a buffer fails with VN_ERROR_BINDING instead. */
typedef enum vn_foreign_state {
    VN_FOREIGN_USABLE = 0,
    VN_FOREIGN_MAPPED = 1,   /* mapped or map-pending */
    VN_FOREIGN_DESTROYED = 2 /* final */
} vn_foreign_state;
/* Set the state, and return the one before. Takes the device's life lock for writing,
 * so it waits for any submit between its check and its queue call; every submit after
 * it sees the new state. Report MAPPED before wgpu-py's map call and DESTROYED before
 * its destroy; USABLE after its unmap. */
vn_foreign_state vn_buffer_set_foreign_state(vn_buffer *buffer, vn_foreign_state state);
/* One more reference, for a watcher or a second handle on the same object, written
 * into `slot` (an out-parameter as a creating call's; NULL there when the object is not live). */
void vn_buffer_retain_for_watch(vn_buffer *buffer, vn_buffer **slot);
void vn_device_retain_for_watch(vn_device *device, vn_device **slot);
/* wgpu-py destroys a device it shares with this layer: this destroys it instead, as
 * vn_device_destroy does (waiting for any submit and encoding of ours in flight), even
 * when the vn device was closed; later calls fail with VN_ERROR_DEVICE_LOST (`reason`). */
void vn_device_destroy_shared(vn_device *device, const char *reason);
