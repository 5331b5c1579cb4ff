// Links to share: `?url=https://…/model.safetensors` opens that model when the page loads,
// and `#tensor=NAME` opens that tensor's detail once the model is shown. The address bar
// follows what the page shows (replaceState: no history entry per click), so copying it
// gives the link. A model opened from local files has no link: its ?url= is removed.

export function readLink(location = window.location) {
  const url = new URLSearchParams(location.search).get('url');
  const hash = new URLSearchParams(location.hash.replace(/^#/, ''));
  return { url: url || null, tensor: hash.get('tensor') || null };
}

function replace(update) {
  const next = new URL(window.location.href);
  update(next);
  if (next.href !== window.location.href) window.history.replaceState(null, '', next);
}

// The model's URL, or null for local files (which also drops the tensor).
export function linkModel(url) {
  replace((next) => {
    if (url) next.searchParams.set('url', url);
    else next.searchParams.delete('url');
    next.hash = '';
  });
}

// The tensor whose detail is open, or null.
export function linkTensor(name) {
  replace((next) => {
    next.hash = name ? new URLSearchParams({ tensor: name }).toString() : '';
  });
}
