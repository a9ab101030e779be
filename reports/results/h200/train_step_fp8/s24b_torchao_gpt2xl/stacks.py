"""Runs a Python script (argv[2:]) while a thread writes the main thread's Python stack to argv[1]
each minute: where a long run spends its time when it ends without a result. (faulthandler's
dump_traceback_later crashed the process inside torch.compile's frame evaluation: first/.)"""
import runpy
import sys
import threading
import time
import traceback


def sample(path, main_id, every=60):
    t0 = time.monotonic()
    with open(path, "w") as f:
        while True:
            time.sleep(every)
            frame = sys._current_frames().get(main_id)
            f.write(f"--- {time.monotonic() - t0:.0f} s\n")
            f.writelines(traceback.format_stack(frame)[-25:] if frame else ["(no main thread)\n"])
            f.flush()


threading.Thread(target=sample, args=(sys.argv[1], threading.main_thread().ident),
                 daemon=True).start()
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
