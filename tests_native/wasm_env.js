// Emscripten's getenv() reads its own ENV object, not the process environment: pass the
// variables the tests read through, so `AMN_FORCE_IMPL=scalar ctest` works under Node too.
Module['preRun'] = Module['preRun'] || [];
Module['preRun'].push(function () {
  if (typeof process !== 'undefined' && process.env['AMN_FORCE_IMPL']) {
    ENV['AMN_FORCE_IMPL'] = process.env['AMN_FORCE_IMPL'];
  }
});
