"""The console: server-rendered pages at ``/console``, over the same store functions the API uses.

URL map (every page follows the API's path under ``/v0``, with ``/console`` in its place):

=========================================================  =========================================
``/``                                                      redirects to ``/console``
``/console``                                               dashboard: queue depth, connected
                                                           runners, recent jobs and alerts
``/console/login``, ``/console/logout``                    sign in (password or API token) and out
``/console/runners``                                       runners; admins: create
``/console/runners/{runner}``                              one runner: state, specs, current and
                                                           latest jobs; admins: rotate key, pause,
                                                           unpause, archive (POST sub-paths
                                                           ``/rotate``, ``/pause``, ``/unpause``,
                                                           ``/archive``)
``/console/specs``                                         specs
``/console/specs/{spec}``                                  one spec: its runners and latest jobs
``/console/projects``                                      projects the viewer can see
``/console/projects/{project}``                            one project, linking to its pages below
``/console/projects/{project}/jobs``                       jobs, filters as query parameters
                                                           (``status``, ``spec``, ``runner``,
                                                           ``branch``)
``/console/projects/{project}/jobs/new``                   new-job form (GET form, POST submit)
``/console/projects/{project}/jobs/{job}``                 job detail, live log; POST ``/cancel``,
                                                           ``/rerun``
``/console/projects/{project}/reports``                    reports
``/console/projects/{project}/reports/{report}``           one report
``/console/projects/{project}/perf``                       perf plots, the plot's state in the query
``/console/projects/{project}/alerts``                     alerts and the thresholds' precision;
                                                           POST ``/{alert}/dismiss``,
                                                           ``/{alert}/silence``, ``/activate``,
                                                           ``/{alert}/verdict`` (triage)
``/console/projects/{project}/alerts/{alert}``             one alert, linking to the perf plot
                                                           around it, with the triage buttons
``/console/projects/{project}/thresholds``                 thresholds; ``/new``, ``/{threshold}``
                                                           (edit)
``/console/jobs``, ``/console/reports``, ``/console/perf``  the navigation's project-scoped
``/console/alerts``, ``/console/thresholds``               entries: pick a project, then its page
``/console/static/...``                                    the package's stylesheet and vendored
                                                           htmx and uPlot (no CDN)
=========================================================  =========================================

``{project}``, ``{runner}``, ... take a UUID or a slug, as the API does. Fragments that htmx swaps
in live next to their page, with ``/fragment`` appended (``/console/runners/fragment``); declare
such literal paths (and ``/new``) before the parameterized route beside them.

Adding pages: a module in :mod:`benchrunner.server.console.pages` with a module-level ``router``
(a FastAPI ``APIRouter`` whose paths start with ``/console``) is included by :func:`install`;
handlers take the viewer (:data:`~benchrunner.server.console.viewer.CurrentViewer`), answer with
:func:`~benchrunner.server.console.templating.render`, and every POST form carries
``{{ csrf_input }}`` and its handler depends on
:data:`~benchrunner.server.console.csrf.CsrfChecked`.
"""

from benchrunner.server.console.mount import install

__all__ = ["install"]
