"""Python code that prints the parent-death signal its own process is armed with (0: none)."""

PR_GET_PDEATHSIG = 2
READ_PDEATHSIG = (
    "import ctypes; value = ctypes.c_int(); "
    f"ctypes.CDLL(None).prctl({PR_GET_PDEATHSIG}, ctypes.byref(value)); print(value.value)"
)
