"""One run of a command under its own rusage, for the scale scripts (report_scale.sh,
sqlite_scale.sh): prints LABEL, the exit status, max RSS (KiB), user and system seconds and
wall time. Usage: measure.py LABEL COMMAND..."""
import resource
import subprocess
import sys
import time

t = time.time()
rc = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL).returncode
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{sys.argv[1]} rc={rc} maxrss_kib={ru.ru_maxrss} user_s={ru.ru_utime:.2f} "
      f"sys_s={ru.ru_stime:.2f} wall_s={time.time() - t:.2f}")
