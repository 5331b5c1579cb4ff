// The layer tree: the tensors grouped by their dotted names (model → layers → 3 →
// self_attn → q_proj → weight), each group with its tensor count, parameters and bytes.
// Children sort naturally (layers 2 before 10). A group's children are rendered the
// first time it opens, so a model with tens of thousands of tensors costs only what is
// shown. It shows the same tensors as the table (its filter applies) and opens the
// same detail view.

import { formatBytes, formatCount, formatInteger, formatShape } from './format.js';
import { compareNatural } from './names.js';

// tensors (displayTensors) -> the root group:
//   group: { name (this level's part), path, groups: Map, leaves: [], tensors, parameters, bytes }
//   leaf:  { name (last part), tensor }
export function buildTree(tensors) {
  const root = newGroup('', '');
  for (const tensor of tensors) {
    const parts = tensor.name.split('.');
    let group = root;
    add(group, tensor);
    for (let i = 0; i < parts.length - 1; i += 1) {
      let next = group.groups.get(parts[i]);
      if (!next) {
        next = newGroup(parts[i], parts.slice(0, i + 1).join('.'));
        group.groups.set(parts[i], next);
      }
      group = next;
      add(group, tensor);
    }
    group.leaves.push({ name: parts[parts.length - 1], tensor });
  }
  return root;
}

function newGroup(name, path) {
  return { name, path, groups: new Map(), leaves: [], tensors: 0, parameters: 0, bytes: 0 };
}

function add(group, tensor) {
  group.tensors += 1;
  group.parameters += tensor.parameters;
  group.bytes += tensor.nbytes;
}

// A group's children in display order: groups and leaves together, naturally sorted.
export function childrenOf(group) {
  const items = [...group.groups.values()].map((g) => ({ key: g.name, group: g }))
    .concat(group.leaves.map((l) => ({ key: l.name, leaf: l })));
  return items.sort((a, b) => compareNatural(a.key, b.key));
}

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  Object.assign(node, props);
  node.append(...children);
  return node;
}

const OPEN_LEVELS = 2; // the first levels start open (model, layers)

export class LayerTree {
  // container: where the tree goes; tableBox: the table's box, hidden while the tree
  // shows; tableButton / treeButton: the switch (aria-pressed); filterInput and
  // matches(tensor): the table's filter; onOpen(tensor): the detail view.
  constructor({ container, tableBox, tableButton, treeButton, filterInput, matches, onOpen }) {
    Object.assign(this, { container, tableBox, tableButton, treeButton, matches, onOpen });
    this.tensors = [];
    this.shown = false;
    tableButton.addEventListener('click', () => this.show(false));
    treeButton.addEventListener('click', () => this.show(true));
    filterInput.addEventListener('input', () => { if (this.shown) this.refresh(); });
  }

  show(tree) {
    this.shown = tree;
    this.tableButton.setAttribute('aria-pressed', String(!tree));
    this.treeButton.setAttribute('aria-pressed', String(tree));
    this.tableBox.hidden = tree;
    this.container.hidden = !tree;
    if (tree) this.refresh();
  }

  // The open button of a tensor's leaf, if its group is open.
  leafButton(name) {
    for (const button of this.container.querySelectorAll('button.tree-leaf')) {
      if (button.getAttribute('aria-label') === name) return button;
    }
    return null;
  }

  setTensors(tensors) {
    this.tensors = tensors;
    if (this.shown) this.refresh();
  }

  refresh() {
    const root = buildTree(this.tensors.filter((t) => this.matches(t)));
    const list = el('ul', { className: 'tree-list', role: 'list' });
    for (const child of childrenOf(root)) list.append(this.item(child, 1));
    this.container.replaceChildren(list);
  }

  item(child, level) {
    if (child.leaf) {
      const { tensor } = child.leaf;
      const open = el('button', { type: 'button', className: 'tree-leaf', textContent: child.leaf.name });
      open.setAttribute('aria-label', tensor.name);
      open.title = tensor.name;
      open.addEventListener('click', () => this.onOpen(tensor));
      return el('li', { className: 'tree-tensor' }, open,
        el('span', { className: 'tree-meta', textContent: `${tensor.dtype} · ${formatShape(tensor.shape)} · ${formatBytes(tensor.nbytes)}` }));
    }
    const { group } = child;
    const details = el('details', { className: 'tree-group' });
    details.dataset.path = group.path;
    const summary = el('summary', {},
      el('span', { className: 'tree-name', textContent: group.name }),
      el('span', { className: 'tree-meta', textContent: `${formatInteger(group.tensors)} ${group.tensors === 1 ? 'tensor' : 'tensors'} · `
        + `${formatCount(group.parameters)} parameters · ${formatBytes(group.bytes)}`, title: `${formatInteger(group.parameters)} parameters, ${formatInteger(group.bytes)} bytes` }));
    details.append(summary);
    let rendered = false;
    const render = () => {
      if (rendered || !details.open) return;
      rendered = true;
      const list = el('ul', { className: 'tree-list', role: 'list' });
      for (const c of childrenOf(group)) list.append(this.item(c, level + 1));
      details.append(list);
    };
    details.addEventListener('toggle', render);
    if (level <= OPEN_LEVELS) {
      details.open = true;
      render();
    }
    return el('li', {}, details);
  }
}
