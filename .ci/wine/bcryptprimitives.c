/* A stand-in for Windows 10's bcryptprimitives.dll in a Wine 8 prefix, for running the
 * Windows build here: Rust's std imports ProcessPrng from it, which Debian's Wine 8 lacks.
 * It fills the buffer from RtlGenRandom (advapi32's SystemFunction036), as Windows does.
 * Built with Debian's mingw-w64 and placed in the test prefix's system32 only:
 *   x86_64-w64-mingw32-gcc -O2 -shared -o bcryptprimitives.dll bcryptprimitives.c \
 *       bcryptprimitives.def -ladvapi32
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, n)) {
            return FALSE;
        }
        data += n;
        len -= n;
    }
    return TRUE;
}
