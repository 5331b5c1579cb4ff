// The full name of a shortened tensor name, shown over it while the pointer is on it or
// it has keyboard focus. One element for the whole table, fixed to the viewport, so the
// cells' overflow never clips it (a native title tooltip would not show on focus).

export class NameTip {
  constructor(container) {
    this.node = document.createElement('div');
    this.node.className = 'name-tip';
    this.node.setAttribute('aria-hidden', 'true'); // the button's aria-label says it already
    this.node.hidden = true;
    document.body.append(this.node);
    this.owner = null;
    const show = (event) => {
      const button = event.target.closest?.('button.tensor-open');
      if (button) this.show(button);
    };
    const hide = (event) => {
      if (event.target.closest?.('button.tensor-open') === this.owner) this.hide();
    };
    container.addEventListener('mouseover', show);
    container.addEventListener('focusin', show);
    container.addEventListener('mouseout', hide);
    container.addEventListener('focusout', hide);
    container.addEventListener('scroll', () => this.hide(), { passive: true });
    window.addEventListener('resize', () => this.hide());
  }

  show(button) {
    const full = button.getAttribute('aria-label');
    if (!full) { this.hide(); return; } // not shortened: nothing more to show
    this.owner = button;
    this.node.textContent = full;
    this.node.hidden = false;
    const box = button.getBoundingClientRect();
    const width = Math.min(window.innerWidth - 16, Math.max(box.width, 320));
    this.node.style.maxWidth = `${width}px`;
    this.node.style.left = `${Math.max(8, Math.min(box.left - 4, window.innerWidth - width - 8))}px`;
    this.node.style.top = `${box.bottom + 2}px`;
  }

  hide() {
    this.owner = null;
    this.node.hidden = true;
  }
}
