"""NVML through ctypes for the PyTorch peer: a 10 ms sampler of the total-energy counter, clocks,
temperature, power and clock-event (throttle) reasons, as xfbench's SDK reads them. Standard library
only.

The energy counter steps only about every 100 ms and one read costs ~3 ms, so it is read here, on
the sampler's thread, never in the timing loop; each sample reads it first and stamps its time
right after, so the time belongs to the energy reading (steady_state.span_power uses the pair).

`Nvml.open(...)` returns (Nvml, None) or (None, reason): the peer runs without telemetry when the
driver library is missing, and says so once.
"""

import collections
import ctypes
import threading
import time

NVML_SUCCESS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0
SAMPLE_PERIOD_S = 0.01

# One sampler reading; energy_mj, reasons and power_w are None where NVML could not say.
Sample = collections.namedtuple("Sample", "t energy_mj sm_mhz mem_mhz temp_c reasons power_w")


class Nvml:
    def __init__(self, lib, handle, how):
        self.lib = lib
        self.handle = handle
        self.how = how            # "pci <bus id>" or "index <n>": how the device was found

    @staticmethod
    def open(pci_bus_id=None, index=0):
        """The NVML device of a CUDA device: by PCI bus id (the same GPU whatever the ordering),
        else by index."""
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as e:
            return None, f"libnvidia-ml.so.1 not loadable: {e}"
        for name in ("nvmlInit_v2", "nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetClockInfo",
                     "nvmlDeviceGetTemperature"):
            if not hasattr(lib, name):
                return None, f"libnvidia-ml.so.1 has no {name}"
        rc = lib.nvmlInit_v2()
        if rc != NVML_SUCCESS:
            return None, f"nvmlInit_v2 failed with code {rc}"
        handle = ctypes.c_void_p()
        if pci_bus_id:
            rc = lib.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(handle))
            how = f"pci {pci_bus_id}"
        else:
            rc = lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(handle))
            how = f"index {index}"
        if rc != NVML_SUCCESS:
            return None, f"no NVML device for {how} (code {rc})"
        n = Nvml(lib, handle, how)
        if n.energy_mj() is None:
            return None, "nvmlDeviceGetTotalEnergyConsumption is not supported on this GPU"
        return n, None

    def _read(self, fn, *args, ctype=ctypes.c_uint):
        v = ctype()
        return v.value if fn(self.handle, *args, ctypes.byref(v)) == NVML_SUCCESS else None

    def energy_mj(self):
        """Energy since the driver loaded, in mJ."""
        return self._read(self.lib.nvmlDeviceGetTotalEnergyConsumption, ctype=ctypes.c_ulonglong)

    def clock_event_reasons(self):
        # Renamed from ...ClocksThrottleReasons in recent drivers; either gives the same bits.
        fn = getattr(self.lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            getattr(self.lib, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        return self._read(fn, ctype=ctypes.c_ulonglong) if fn else None

    def power_w(self):
        """NVML's power reading (W), or None."""
        fn = getattr(self.lib, "nvmlDeviceGetPowerUsage", None)
        mw = self._read(fn) if fn else None
        return mw / 1e3 if mw is not None else None

    def power_limit_w(self):
        """The enforced power limit (W), or None."""
        fn = getattr(self.lib, "nvmlDeviceGetEnforcedPowerLimit", None)
        mw = self._read(fn) if fn else None
        return mw / 1e3 if mw is not None else None

    def sample(self):
        """A Sample, or None if a clock or the temperature could not be read. The energy counter is
        read first and the time stamped right after it."""
        energy = self.energy_mj()
        t = time.perf_counter()
        sm = self._read(self.lib.nvmlDeviceGetClockInfo, ctypes.c_int(NVML_CLOCK_SM))
        mem = self._read(self.lib.nvmlDeviceGetClockInfo, ctypes.c_int(NVML_CLOCK_MEM))
        temp = self._read(self.lib.nvmlDeviceGetTemperature, ctypes.c_int(NVML_TEMPERATURE_GPU))
        power = self.power_w()
        reasons = self.clock_event_reasons()
        if None in (sm, mem, temp):
            return None
        return Sample(t, energy, sm, mem, temp, reasons or 0, power)


class Sampler:
    """Samples an Nvml every 10 ms on a thread between start() and stop() (which returns them)."""

    def __init__(self, nvml):
        self.nvml = nvml
        self.samples = []
        self.reasons_seen = 0   # clock-event reason bits of every sample so far
        self.limit_w = nvml.power_limit_w()  # for steady_state.at_power_limit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while True:
            s = self.nvml.sample()
            if s is not None:
                self.samples.append(s)
                self.reasons_seen |= s.reasons
            if self._stop.wait(SAMPLE_PERIOD_S):
                return

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.samples
